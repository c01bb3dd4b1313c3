#pragma once
// What kiln::cuda (kiln/core/cuda.h) asks of the CUDA backend beyond the DeviceBackend interface:
// the caching allocator's statistics (PyTorch's CUDAHooksInterface, in small). The backend sets
// the hooks when it loads; without it, kiln::cuda answers "no GPU".
#include <cstdint>
#include <map>
#include <string>

namespace kiln::cuda {

class CudaHooks {
 public:
  virtual ~CudaHooks() = default;
  // torch.cuda.memory_stats' keys: "allocated_bytes.all.current", ".peak", "reserved_bytes...",
  // "active.all.current", "segment.all.current", "num_alloc_retries", "num_ooms".
  virtual std::map<std::string, int64_t> memory_stats(int device) = 0;
  virtual void reset_peak_memory_stats(int device) = 0;
  virtual void empty_cache() = 0;
};

void set_hooks(CudaHooks* hooks);
CudaHooks* hooks();  // null until the CUDA backend loads

}  // namespace kiln::cuda
