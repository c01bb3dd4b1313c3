#include "kiln/backend/cuda/backend.h"

#include "kiln/backend/cuda/device_assert.h"
#include "kiln/backend/cuda/graphs.h"
#include "kiln/backend/cuda/host_allocator.h"
#include "kiln/backend/cuda/runtime.h"
#include "kiln/core/error.h"

namespace kiln::cuda {
namespace {

RawMemory device_memory(int device) {
  RawMemory raw;
  raw.malloc = [device](size_t bytes) -> void* {
    void* p = nullptr;
    DeviceIndexGuard on(Device(kCUDA, device));
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();  // out of memory is reported by the allocator, not left sticky
      return nullptr;
    }
    return p;
  };
  raw.free = [](void* p) { detail::check(cudaFree(p), "cuda: cudaFree"); };
  raw.record_event = [](void* stream) -> void* {
    cudaEvent_t e = nullptr;
    detail::check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cuda: cudaEventCreate");
    detail::check(cudaEventRecord(e, static_cast<cudaStream_t>(stream)), "cuda: cudaEventRecord");
    return e;
  };
  raw.event_done = [](void* e) {
    cudaError_t r = cudaEventQuery(static_cast<cudaEvent_t>(e));
    if (r == cudaErrorNotReady) return false;
    detail::check(r, "cuda: cudaEventQuery");
    return true;
  };
  raw.destroy_event = [](void* e) { cudaEventDestroy(static_cast<cudaEvent_t>(e)); };
  return raw;
}

}  // namespace

CudaBackend::CudaBackend() {
  if (cudaGetDeviceCount(&device_count_) != cudaSuccess) {
    cudaGetLastError();
    device_count_ = 0;  // no driver or no device: Kiln runs on the CPU
  }
  for (int d = 0; d < device_count_; ++d)
    allocators_.push_back(std::make_unique<CachingAllocator>(device_memory(d)));
}

int CudaBackend::current_device() const { return device_count_ ? detail::current_device() : 0; }

void CudaBackend::set_current_device(int index) {
  KILN_CHECK(index >= 0 && index < device_count_, "cuda: device index ", index,
             " is out of range (", device_count_, " CUDA devices)");
  detail::check(cudaSetDevice(index), "cuda: cudaSetDevice");
}

CachingAllocator& CudaBackend::device_allocator(int index) {
  KILN_CHECK(index >= 0 && index < device_count_, "cuda: device index ", index,
             " is out of range (", device_count_, " CUDA devices)");
  return *allocators_[index];
}

void* CudaBackend::allocate(size_t nbytes) {
  KILN_CHECK(device_count_ > 0,
             "cuda: no CUDA device is available (cudaGetDeviceCount found none)");
  const int d = detail::current_device();
  void* p = device_allocator(d).allocate(nbytes, allocation_key(detail::current_stream()));
  if (p) {
    std::lock_guard<std::mutex> lock(owners_mutex_);
    owners_[p] = d;
  }
  return p;
}

void CudaBackend::deallocate(void* p, size_t) {
  if (!p) return;
  int d = 0;
  {
    std::lock_guard<std::mutex> lock(owners_mutex_);
    auto it = owners_.find(p);
    KILN_CHECK(it != owners_.end(), "cuda: freeing a pointer the CUDA allocator did not allocate");
    d = it->second;
    owners_.erase(it);
  }
  allocators_[d]->deallocate(p);
}

Allocator* CudaBackend::host_allocator() { return &cuda::host_allocator(); }

void CudaBackend::copy_bytes(void* dst, Device dst_device, const void* src, Device src_device,
                             size_t nbytes) {
  if (nbytes == 0) return;
  const cudaStream_t stream = detail::current_stream();
  KILN_CHECK(!capturing(stream),
             "cuda: a copy between the host and the device cannot be captured into a CUDA graph "
             "(it waits for the device: item(), cpu(), to(kCUDA) of host data, or an op that runs "
             "through the CPU fallback; see kiln::cpu_fallback_ops()). Move it out of the "
             "captured region.");
  detail::check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDefault, stream),
                "cuda: cudaMemcpyAsync");
  if (!dst_device.is_cpu()) return;
  detail::check(cudaStreamSynchronize(stream), "cuda: copy to the host");
  check_device_asserts(src_device.has_index() ? src_device.index() : detail::current_device());
}

void CudaBackend::synchronize(int index) {
  DeviceIndexGuard on(Device(kCUDA, index));
  KILN_CHECK(!capturing(detail::current_stream()),
             "cuda::synchronize: cannot wait for the device while a CUDA graph is being captured "
             "on the current stream");
  detail::check(cudaDeviceSynchronize(), "cuda: synchronize");
  check_device_asserts(index);
}

CudaBackend& backend() {
  auto* b = static_cast<CudaBackend*>(device_backend(kCUDA));
  KILN_CHECK(b, "cuda: the CUDA backend is not loaded");
  return *b;
}

}  // namespace kiln::cuda
