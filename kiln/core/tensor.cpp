#include "kiln/core/tensor.h"

#include <sstream>

#include "kiln/core/error.h"

namespace kiln {

TensorImpl* Tensor::checked() const {
  KILN_CHECK(impl_ != nullptr, "Tensor: the tensor is undefined (default-constructed)");
  return impl_.get();
}

namespace {
int64_t wrap_dim_for(const Tensor& t, int64_t d, const char* what) {
  int64_t n = t.dim();
  int64_t lo = n == 0 ? -1 : -n, hi = n == 0 ? 0 : n - 1;
  KILN_CHECK(d >= lo && d <= hi, what, ": dimension out of range (expected to be in range of [", lo,
             ", ", hi, "], but got ", d, ")");
  return d < 0 ? d + std::max<int64_t>(n, 1) : d;
}
}  // namespace

int64_t Tensor::size(int64_t d) const {
  KILN_CHECK(dim() > 0, "size: a 0-dim tensor has no dimension ", d);
  // Only this dim is specialised (a symbolic size records a guard on it alone).
  return checked()->sym_sizes()[wrap_dim_for(*this, d, "size")].guard_int();
}

int64_t Tensor::stride(int64_t d) const {
  KILN_CHECK(dim() > 0, "stride: a 0-dim tensor has no dimension ", d);
  return checked()->sym_strides()[wrap_dim_for(*this, d, "stride")].guard_int();
}

SymInt Tensor::sym_size(int64_t d) const {
  KILN_CHECK(dim() > 0, "sym_size: a 0-dim tensor has no dimension ", d);
  return checked()->sym_sizes()[wrap_dim_for(*this, d, "sym_size")];
}

SymInt Tensor::sym_stride(int64_t d) const {
  KILN_CHECK(dim() > 0, "sym_stride: a 0-dim tensor has no dimension ", d);
  return checked()->sym_strides()[wrap_dim_for(*this, d, "sym_stride")];
}

void* Tensor::data_ptr() const {
  if (checked()->is_traced())
    throw DataDependentError(
        "data_ptr: the tensor is a traced value, whose data the trace does not have (item(), "
        "data_ptr() and printing read values; see docs/compile.md)");
  if (const auto& e = impl_->extension())
    KILN_FAIL("data_ptr: the tensor is ", e->describe(),
              ", whose values are not one tensor's: item(), data_ptr() and printing cannot read "
              "them inside the transform; compute with ops, or return the tensor");
  KILN_CHECK(!is_meta(), "data_ptr: a meta tensor has no data");
  return checked()->data();
}

template <class T>
T* Tensor::data_ptr() const {
  KILN_CHECK(dtype() == dtype_of<T>, "data_ptr<", dtype_of<T>, ">: the tensor's dtype is ",
             dtype());
  return static_cast<T*>(data_ptr());
}
#define KILN_INSTANTIATE_DATA_PTR(cpp, name) template cpp* Tensor::data_ptr<cpp>() const;
KILN_FORALL_SCALAR_TYPES(KILN_INSTANTIATE_DATA_PTR)
#undef KILN_INSTANTIATE_DATA_PTR

Scalar Tensor::item() const {
  if (checked()->is_traced())
    throw DataDependentError(
        "item: the tensor is a traced value, whose element the trace does not have (a function "
        "that reads values runs eagerly; see docs/compile.md)");
  KILN_CHECK(numel() == 1, "item: a Tensor with ", numel(),
             " elements cannot be converted to Scalar");
  if (!is_cpu()) return to(Device(kCPU)).item();  // waits for the device, as PyTorch's item()
  const void* p = data_ptr();
  return visit_dtype(dtype(), [&](auto v) -> Scalar {
    using T = decltype(v);
    return Scalar(*static_cast<const T*>(p));
  });
}

std::string Tensor::toString() const {
  static const char* names[] = {"Bool", "Byte", "Char",     "Short", "Int",
                                "Long", "Half", "BFloat16", "Float", "Double"};
  std::string dev = is_meta() ? "Meta" : is_cuda() ? "CUDA" : "CPU";
  return dev + names[static_cast<int>(dtype())] + "Type";
}

std::ostream& operator<<(std::ostream& os, IntArrayRef r) {
  os << "[";
  for (size_t i = 0; i < r.size(); ++i) os << (i ? ", " : "") << r[i];
  return os << "]";
}

std::ostream& operator<<(std::ostream& os, SymIntArrayRef r) {
  os << "[";
  for (size_t i = 0; i < r.size(); ++i) os << (i ? ", " : "") << r[i];
  return os << "]";
}

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  if (s.is_bool()) return os << (s.to<bool>() ? "True" : "False");
  if (s.is_integral()) return os << s.to_long();
  return os << s.to_double();
}

}  // namespace kiln
