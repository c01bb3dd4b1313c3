#include "kiln/ops/special.h"

#include <limits>
#include <numbers>

#include "kiln/ops/ops.h"

namespace kiln::special {

Tensor expit(const Tensor& self) { return kiln::sigmoid(self); }
Tensor logit(const Tensor& self, std::optional<double> eps) { return kiln::logit(self, eps); }
Tensor erf(const Tensor& self) { return kiln::erf(self); }
Tensor erfc(const Tensor& self) { return kiln::erfc(self); }
Tensor erfinv(const Tensor& self) { return kiln::erfinv(self); }
Tensor exp2(const Tensor& self) { return kiln::exp2(self); }
Tensor expm1(const Tensor& self) { return kiln::expm1(self); }
Tensor log1p(const Tensor& self) { return kiln::log1p(self); }
Tensor round(const Tensor& self) { return kiln::round(self); }
Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return kiln::logsumexp(self, dim, keepdim);
}
Tensor softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return kiln::softmax(self, dim, dtype);
}
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return kiln::log_softmax(self, dim, dtype);
}

Tensor ndtr(const Tensor& self) { return (kiln::erf(self * std::numbers::sqrt2 / 2) + 1) * 0.5; }

Tensor sinc(const Tensor& self) {
  const Tensor x = self * std::numbers::pi;
  // Dividing where x is 0 would give NaN in the value and in the gradient; 1 is the limit.
  const Tensor zero = x == 0;
  const Tensor safe = where(zero, 1.0, x);
  return where(zero, 1.0, kiln::sin(safe) / safe);
}

Tensor entr(const Tensor& self) {
  const Tensor positive = self > 0;
  const Tensor safe = where(positive, self, 1.0);
  const Tensor value = where(positive, -self * kiln::log(safe), 0.0);
  return where(self < 0, -std::numeric_limits<double>::infinity(), value);
}

Tensor xlogy(const Tensor& self, const Tensor& other) {
  const Tensor zero = (self == 0) & kiln::isnan(other).logical_not();
  const Tensor safe = where(zero, 1.0, other);
  return where(zero, 0.0, self * kiln::log(safe));
}

}  // namespace kiln::special
