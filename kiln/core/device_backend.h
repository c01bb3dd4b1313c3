#pragma once
// What a device backend gives the core: its devices, memory and copies (ggml's device interface,
// PyTorch's DeviceGuardImpl plus allocator). The CPU needs none. Backends are shared libraries
// that Kiln loads on first use (docs/device_backends.md): from the `kiln/backends` folder beside
// libkiln.so and from the paths in KILN_DEVICE_BACKENDS; KILN_DEVICE_BACKEND_AUTOLOAD=0 turns
// the search off. A backend library exports `extern "C" void kiln_device_backend_init()`, which
// registers its DeviceBackend and its kernels (set_kernel, kiln/ops/registry.h).
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "kiln/core/device.h"
#include "kiln/core/storage.h"

namespace kiln {

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual DeviceType type() const = 0;
  virtual int device_count() const = 0;
  // The device new work goes to on this thread (index), and changing it.
  virtual int current_device() const = 0;
  virtual void set_current_device(int index) = 0;
  // Allocates on the current device.
  virtual Allocator* allocator() = 0;
  // Page-locked host memory that this backend's devices copy to and from asynchronously
  // (Tensor::pin_memory, TensorOptions::pinned_memory); null when the backend has none.
  virtual Allocator* host_allocator() { return nullptr; }
  // Copies nbytes between host memory and this backend's memory, or within it. Ordered after
  // the work already queued on the current stream; returns once `dst` may be read by the host
  // when dst is host memory.
  virtual void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device,
                          size_t nbytes) = 0;
  // Waits for all work queued on the device.
  virtual void synchronize(int index) = 0;
  // Whether ops without a kernel for this device may run on the CPU (inputs copied to host,
  // outputs copied back), each such op logged once.
  virtual bool cpu_fallback() const { return true; }
};

// Registers the backend of its device type (a second registration for a type is ignored).
void register_device_backend(std::unique_ptr<DeviceBackend> backend);
// The backend of `t`, loading backends first if that has not happened; null when none
// registered (always for the CPU).
DeviceBackend* device_backend(DeviceType t);
// As device_backend, but a missing backend is an error naming `who` and the device.
DeviceBackend& require_device_backend(DeviceType t, const char* who);

// Loads backend libraries (once per process; later calls return at once). Returns what it did,
// one line per library tried, for `kiln info` and the tests.
const std::vector<std::string>& load_device_backends();
// Loads one backend library now (a path), whatever the autoload settings.
void load_device_backend(const std::string& path);

// Makes `device` current for its backend for a scope (nothing for the CPU or an index of -1).
class DeviceIndexGuard {
 public:
  explicit DeviceIndexGuard(Device device);
  ~DeviceIndexGuard();
  DeviceIndexGuard(const DeviceIndexGuard&) = delete;
  DeviceIndexGuard& operator=(const DeviceIndexGuard&) = delete;

 private:
  DeviceBackend* backend_ = nullptr;
  int previous_ = -1;
};

}  // namespace kiln
