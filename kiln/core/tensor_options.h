#pragma once
// TensorOptions: dtype, device and requires_grad for factory functions, as libtorch's.
#include <optional>

#include "kiln/core/device.h"
#include "kiln/core/dtype.h"

namespace kiln {

class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(ScalarType t) : dtype_(t) {}   // NOLINT: kiln::zeros({2}, kFloat)
  TensorOptions(Device d) : device_(d) {}      // NOLINT
  TensorOptions(DeviceType t) : device_(t) {}  // NOLINT

  TensorOptions dtype(ScalarType t) const {
    auto o = *this;
    o.dtype_ = t;
    return o;
  }
  TensorOptions device(Device d) const {
    auto o = *this;
    o.device_ = d;
    return o;
  }
  TensorOptions device(DeviceType t, int index) const { return device(Device(t, index)); }
  TensorOptions device_index(int index) const { return device(Device(kCUDA, index)); }
  template <class T>
  TensorOptions dtype() const {
    return dtype(dtype_of<T>);
  }
  // Page-locked host memory only speeds up copies to a GPU; CPU tensors accept and ignore it.
  TensorOptions pinned_memory(bool p) const {
    auto o = *this;
    o.pinned_memory_ = p;
    return o;
  }
  TensorOptions requires_grad(bool r) const {
    auto o = *this;
    o.requires_grad_ = r;
    return o;
  }

  ScalarType dtype() const { return dtype_.value_or(get_default_dtype()); }
  Device device() const { return device_.value_or(default_device()); }
  bool requires_grad() const { return requires_grad_; }
  bool pinned_memory() const { return pinned_memory_; }
  bool has_dtype() const { return dtype_.has_value(); }
  bool has_device() const { return device_.has_value(); }
  std::optional<ScalarType> dtype_opt() const { return dtype_; }

 private:
  std::optional<ScalarType> dtype_;
  std::optional<Device> device_;
  bool requires_grad_ = false;
  bool pinned_memory_ = false;
};

inline TensorOptions dtype(ScalarType t) { return TensorOptions().dtype(t); }
template <class T>
TensorOptions dtype() {
  return TensorOptions().dtype<T>();
}
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

}  // namespace kiln
