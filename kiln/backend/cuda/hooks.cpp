// kiln::cuda's memory functions (kiln/core/cuda_hooks.h) over the caching allocators.
#include "kiln/backend/cuda/backend.h"
#include "kiln/core/cuda_hooks.h"

namespace kiln::cuda {
namespace {

class Hooks final : public CudaHooks {
 public:
  explicit Hooks(CudaBackend& backend) : backend_(backend) {}

  std::map<std::string, int64_t> memory_stats(int device) override {
    const MemoryStats s = backend_.device_allocator(device).stats();
    return {{"allocated_bytes.all.current", s.allocated_bytes.current},
            {"allocated_bytes.all.peak", s.allocated_bytes.peak},
            {"reserved_bytes.all.current", s.reserved_bytes.current},
            {"reserved_bytes.all.peak", s.reserved_bytes.peak},
            {"active.all.current", s.active_blocks.current},
            {"active.all.peak", s.active_blocks.peak},
            {"segment.all.current", s.segments.current},
            {"segment.all.peak", s.segments.peak},
            {"num_alloc_retries", s.num_alloc_retries},
            {"num_ooms", s.num_ooms}};
  }
  void reset_peak_memory_stats(int device) override {
    backend_.device_allocator(device).reset_peak_stats();
  }
  void empty_cache() override {
    for (int d = 0; d < backend_.device_count(); ++d) backend_.device_allocator(d).empty_cache();
  }

 private:
  CudaBackend& backend_;
};

}  // namespace

void register_hooks(CudaBackend& backend) {
  static Hooks hooks(backend);
  set_hooks(&hooks);
}

}  // namespace kiln::cuda
