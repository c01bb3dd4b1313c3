// isclose, allclose and logit: composed from registered pointwise ops.
#include "kiln/ops/pointwise.h"
#include "kiln/ops/reduce.h"

namespace kiln {

Tensor isclose(const Tensor& self, const Tensor& other, double rtol, double atol, bool equal_nan) {
  KILN_CHECK(self.dtype() == other.dtype(), "isclose: ", self.dtype(), " did not match ",
             other.dtype());
  KILN_CHECK(rtol >= 0 && atol >= 0, "isclose: rtol and atol must be non-negative, got rtol=", rtol,
             " and atol=", atol);
  Tensor equal = self == other;  // infinities of the same sign, and exact matches
  if (equal_nan) equal = equal | (self.isnan() & other.isnan());
  if (!self.is_floating_point()) return equal;
  const Tensor within = (self - other).abs() <= (other.abs() * rtol + atol);
  return equal | (within & self.isfinite() & other.isfinite());
}

bool allclose(const Tensor& self, const Tensor& other, double rtol, double atol, bool equal_nan) {
  return isclose(self, other, rtol, atol, equal_nan).all().item<bool>();
}

Tensor logit(const Tensor& self, std::optional<double> eps) {
  KILN_CHECK(self.is_floating_point(), "logit: expected a floating-point input, got ",
             self.dtype());
  const Tensor p = eps ? self.clamp(*eps, 1 - *eps) : self;
  return (p / (1 - p)).log();
}

Tensor Tensor::isclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return kiln::isclose(*this, other, rtol, atol, equal_nan);
}
bool Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return kiln::allclose(*this, other, rtol, atol, equal_nan);
}

}  // namespace kiln
