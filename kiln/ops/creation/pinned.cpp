#include "kiln/ops/creation/pinned.h"

#include "kiln/core/device_backend.h"
#include "kiln/core/error.h"
#include "kiln/ops/creation.h"

#include <vector>

namespace kiln {
namespace {

Tensor on_pinned_storage(const SymShape& sizes, ScalarType dtype, Allocator* host) {
  int64_t numel = 1;
  for (const SymInt& s : sizes) numel *= s.guard_int();
  auto storage = StorageImpl::pinned(static_cast<size_t>(numel) * element_size(dtype), host);
  return Tensor(
      std::make_shared<TensorImpl>(std::move(storage), dtype, sizes, contiguous_strides(sizes), 0));
}

// The host allocator of `type`'s backend, or without a type, of the first backend (CUDA's
// first) that has one and a device: the current accelerator.
Allocator* host_allocator_of(const char* op, std::optional<DeviceType> type) {
  if (type) {
    KILN_CHECK(*type != kCPU, op, ": pinned memory belongs to a device backend, got device cpu");
    DeviceBackend* b = device_backend(*type);
    KILN_CHECK(b && b->host_allocator(), op, ": no pinned memory for ", device_type_name(*type),
               b ? " (its backend has none)" : " (no backend for it is loaded)");
    return b->host_allocator();
  }
  std::vector<DeviceType> order{kCUDA};
  for (int t = 0; t < kNumDeviceTypes; ++t)
    if (auto d = static_cast<DeviceType>(t); d != kCPU && d != kCUDA) order.push_back(d);
  for (DeviceType t : order) {
    DeviceBackend* b = device_backend(t);
    if (b && b->host_allocator() && b->device_count() > 0) return b->host_allocator();
  }
  KILN_FAIL(op,
            ": pinned memory needs a device backend with a device (CUDA), and none is available");
}

}  // namespace

Tensor empty_pinned(const char* op, SymIntList size, const TensorOptions& options,
                    std::optional<Device> backend) {
  KILN_CHECK(!options.has_device() || options.device().is_cpu(), op,
             ": pinned memory is host memory, so the tensor must be on the CPU, got device ",
             options.device());
  Allocator* host = host_allocator_of(op, backend ? std::optional(backend->type()) : std::nullopt);
  SymShape sizes = std::move(size).get();
  for (const SymInt& s : sizes)
    KILN_CHECK(s >= 0, op, ": negative dimension in size ", SymIntArrayRef(sizes));
  return on_pinned_storage(sizes, options.dtype(), host);
}

Tensor empty_pinned_if_available(IntArrayRef size, ScalarType dtype, Device source) {
  DeviceBackend* b = source.is_cpu() ? nullptr : device_backend(source.type());
  Allocator* host = b ? b->host_allocator() : nullptr;
  if (!host) return Tensor();
  SymShape sizes(size.begin(), size.end());
  return on_pinned_storage(sizes, dtype, host);
}

Tensor Tensor::pin_memory(std::optional<Device> device) const {
  KILN_CHECK(is_cpu() && layout() == Layout::Strided,
             "pin_memory: only dense CPU tensors can be pinned, got a tensor on ", this->device());
  if (is_pinned(device)) return *this;
  Tensor out = empty_pinned("pin_memory", sym_sizes(), TensorOptions(dtype()), device);
  out.copy_(*this);
  return out;
}

bool Tensor::is_pinned(std::optional<Device>) const {
  return defined() && impl()->storage() && impl()->storage()->is_pinned();
}

}  // namespace kiln
