#include "kiln/backend/cuda/streams.h"

#include <array>
#include <atomic>
#include <mutex>
#include <vector>

#include "kiln/backend/cuda/device_assert.h"
#include "kiln/backend/cuda/runtime.h"
#include "kiln/core/device_backend.h"

namespace kiln::cuda {
namespace {

constexpr int kPoolSize = 32;

struct Pool {
  std::once_flag made;
  std::array<cudaStream_t, kPoolSize> streams{};
  std::atomic<unsigned> next{0};
};

// Pools per device and priority (0: normal, 1: high); never destroyed, so streams handed out
// stay valid until the process exits.
Pool& pool(int device, bool high) {
  static std::mutex mu;
  static auto* pools = new std::vector<std::array<Pool*, 2>>();
  std::lock_guard<std::mutex> lock(mu);
  if (pools->size() <= static_cast<size_t>(device)) pools->resize(device + 1, {nullptr, nullptr});
  Pool*& p = (*pools)[device][high ? 1 : 0];
  if (!p) p = new Pool();
  return *p;
}

}  // namespace

cudaStream_t pool_stream(int device, bool high_priority) {
  Pool& p = pool(device, high_priority);
  std::call_once(p.made, [&] {
    DeviceIndexGuard on(Device(kCUDA, device));
    int least = 0, greatest = 0;
    detail::check(cudaDeviceGetStreamPriorityRange(&least, &greatest),
                  "cuda: cudaDeviceGetStreamPriorityRange");
    for (cudaStream_t& s : p.streams)
      detail::check(
          cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, high_priority ? greatest : least),
          "cuda: cudaStreamCreateWithPriority");
  });
  return p.streams[p.next++ % kPoolSize];
}

cudaEvent_t create_event(int device, bool timing) {
  DeviceIndexGuard on(Device(kCUDA, device));
  cudaEvent_t e = nullptr;
  detail::check(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming),
                "cuda: cudaEventCreate");
  return e;
}

void destroy_event(int device, cudaEvent_t event) {
  DeviceIndexGuard on(Device(kCUDA, device));
  cudaEventDestroy(event);
}

void record_event(cudaEvent_t event, int device, cudaStream_t stream) {
  DeviceIndexGuard on(Device(kCUDA, device));
  detail::check(cudaEventRecord(event, stream), "Event::record: cudaEventRecord");
}

bool event_done(cudaEvent_t event) {
  const cudaError_t r = cudaEventQuery(event);
  if (r == cudaErrorNotReady) return false;
  detail::check(r, "Event::query: cudaEventQuery");
  return true;
}

void wait_for_event(cudaEvent_t event) {
  detail::check(cudaEventSynchronize(event), "Event::synchronize: cudaEventSynchronize");
  check_device_asserts(detail::current_device());
}

double elapsed_ms(cudaEvent_t start, cudaEvent_t end) {
  float ms = 0;
  detail::check(cudaEventElapsedTime(&ms, start, end), "Event::elapsed_time");
  return ms;
}

bool stream_done(int device, cudaStream_t stream) {
  DeviceIndexGuard on(Device(kCUDA, device));
  const cudaError_t r = cudaStreamQuery(stream);
  if (r == cudaErrorNotReady) return false;
  detail::check(r, "Stream::query: cudaStreamQuery");
  return true;
}

void synchronize_stream(int device, cudaStream_t stream) {
  DeviceIndexGuard on(Device(kCUDA, device));
  detail::check(cudaStreamSynchronize(stream), "Stream::synchronize");
  check_device_asserts(device);
}

void stream_wait(int device, cudaStream_t stream, cudaEvent_t event) {
  DeviceIndexGuard on(Device(kCUDA, device));
  detail::check(cudaStreamWaitEvent(stream, event, 0), "Stream::wait_event");
}

}  // namespace kiln::cuda
