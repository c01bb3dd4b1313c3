// kiln::cuda's memory functions (kiln/core/cuda_hooks.h) over the caching allocators.
#include "kiln/backend/cuda/backend.h"
#include "kiln/backend/cuda/graphs.h"
#include "kiln/backend/cuda/runtime.h"
#include "kiln/backend/cuda/streams.h"
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

  void* stream_from_pool(int device, bool high_priority) override {
    return pool_stream(device, high_priority);
  }
  void* current_stream(int device) override {
    DeviceIndexGuard on(Device(kCUDA, device));
    return detail::current_stream();
  }
  void set_current_stream(int device, void* stream) override {
    detail::set_current_stream(device, static_cast<cudaStream_t>(stream));
  }
  bool stream_query(int device, void* stream) override {
    return stream_done(device, static_cast<cudaStream_t>(stream));
  }
  void stream_synchronize(int device, void* stream) override {
    synchronize_stream(device, static_cast<cudaStream_t>(stream));
  }
  void stream_wait_event(int device, void* stream, void* event) override {
    stream_wait(device, static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event));
  }
  void record_stream(const void* data, int device, void* stream) override {
    backend_.device_allocator(device).record_stream(const_cast<void*>(data), stream);
  }

  void* event_create(int device, bool timing) override { return create_event(device, timing); }
  void event_destroy(int device, void* event) override {
    destroy_event(device, static_cast<cudaEvent_t>(event));
  }
  void event_record(void* event, int device, void* stream) override {
    record_event(static_cast<cudaEvent_t>(event), device, static_cast<cudaStream_t>(stream));
  }
  bool event_query(void* event) override { return event_done(static_cast<cudaEvent_t>(event)); }
  void event_synchronize(void* event) override { wait_for_event(static_cast<cudaEvent_t>(event)); }
  double event_elapsed_ms(void* start, void* end) override {
    return elapsed_ms(static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(end));
  }

  void* graph_create() override { return create_graph(); }
  void graph_destroy(void* graph) override { destroy_graph(static_cast<Graph*>(graph)); }
  void graph_capture_begin(void* graph, int device, void* stream, uint64_t pool) override {
    capture_begin(static_cast<Graph*>(graph), device, static_cast<cudaStream_t>(stream), pool);
  }
  void graph_capture_end(void* graph) override { capture_end(static_cast<Graph*>(graph)); }
  void graph_replay(void* graph, void* stream) override {
    replay(static_cast<Graph*>(graph), static_cast<cudaStream_t>(stream));
  }
  void graph_reset(void* graph) override { reset(static_cast<Graph*>(graph)); }
  uint64_t graph_pool(void* graph) override { return pool_of(static_cast<Graph*>(graph)); }
  uint64_t new_graph_pool() override { return new_pool(); }

 private:
  CudaBackend& backend_;
};

}  // namespace

void register_hooks(CudaBackend& backend) {
  static Hooks hooks(backend);
  set_hooks(&hooks);
}

}  // namespace kiln::cuda
