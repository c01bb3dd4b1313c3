#pragma once
// The CUDA device backend (kiln/core/device_backend.h): devices, the caching allocator per
// device and copies, over the CUDA runtime.
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kiln/backend/cuda/caching_allocator.h"
#include "kiln/core/device_backend.h"

namespace kiln::cuda {

class CudaBackend final : public DeviceBackend, private Allocator {
 public:
  CudaBackend();
  DeviceType type() const override { return kCUDA; }
  int device_count() const override { return device_count_; }
  int current_device() const override;
  void set_current_device(int index) override;
  Allocator* allocator() override { return this; }
  Allocator* host_allocator() override;
  void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device,
                  size_t nbytes) override;
  void synchronize(int index) override;
  bool cpu_fallback() const override { return true; }

  CachingAllocator& device_allocator(int index);

 private:
  void* allocate(size_t nbytes) override;
  void deallocate(void* p, size_t nbytes) override;

  int device_count_ = 0;
  std::vector<std::unique_ptr<CachingAllocator>> allocators_;
  std::mutex owners_mutex_;
  std::unordered_map<void*, int> owners_;  // live pointer -> device
};

// The registered backend (an error when CUDA is unavailable).
CudaBackend& backend();
// Sets kiln::cuda's memory hooks (kiln/core/cuda_hooks.h) to this backend's allocators.
void register_hooks(CudaBackend& backend);

}  // namespace kiln::cuda
