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

  // Streams (cudaStream_t as void*; null is the default stream) of device `device`.
  virtual void* stream_from_pool(int device, bool high_priority) = 0;
  virtual void* current_stream(int device) = 0;
  virtual void set_current_stream(int device, void* stream) = 0;
  virtual bool stream_query(int device, void* stream) = 0;
  virtual void stream_synchronize(int device, void* stream) = 0;
  virtual void stream_wait_event(int device, void* stream, void* event) = 0;
  virtual void record_stream(const void* data, int device, void* stream) = 0;

  // Events (cudaEvent_t as void*).
  virtual void* event_create(int device, bool timing) = 0;
  virtual void event_destroy(int device, void* event) = 0;
  virtual void event_record(void* event, int device, void* stream) = 0;
  virtual bool event_query(void* event) = 0;
  virtual void event_synchronize(void* event) = 0;
  virtual double event_elapsed_ms(void* start, void* end) = 0;

  // CUDA graphs (kiln::cuda::CUDAGraph's handle).
  virtual void* graph_create() = 0;
  virtual void graph_destroy(void* graph) = 0;
  virtual void graph_capture_begin(void* graph, int device, void* stream, uint64_t pool) = 0;
  virtual void graph_capture_end(void* graph) = 0;
  virtual void graph_replay(void* graph, void* stream) = 0;
  virtual void graph_reset(void* graph) = 0;
  virtual uint64_t graph_pool(void* graph) = 0;
  virtual uint64_t new_graph_pool() = 0;
};

void set_hooks(CudaHooks* hooks);
CudaHooks* hooks();  // null until the CUDA backend loads

}  // namespace kiln::cuda
