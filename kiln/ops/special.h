#pragma once
// kiln::special (libtorch's torch::special) for the functions Kiln has ops for: aliases of the
// pointwise and softmax ops, and ndtr, sinc, entr and xlogy composed from them. The gamma
// family (gammaln, digamma, polygamma, multigammaln), Bessel functions and zeta are not in Kiln.
#include <optional>

#include "kiln/core/tensor.h"

namespace kiln::special {

Tensor expit(const Tensor& self);  // sigmoid
Tensor logit(const Tensor& self, std::optional<double> eps = std::nullopt);
Tensor erf(const Tensor& self);
Tensor erfc(const Tensor& self);
Tensor erfinv(const Tensor& self);
Tensor exp2(const Tensor& self);
Tensor expm1(const Tensor& self);
Tensor log1p(const Tensor& self);
Tensor round(const Tensor& self);
Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim = false);
Tensor softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
// The standard normal CDF, (1 + erf(x / sqrt(2))) / 2.
Tensor ndtr(const Tensor& self);
// sin(pi x) / (pi x), 1 at 0.
Tensor sinc(const Tensor& self);
// -x log(x): 0 at 0, -inf below 0.
Tensor entr(const Tensor& self);
// x log(y), 0 where x is 0 (unless y is NaN).
Tensor xlogy(const Tensor& self, const Tensor& other);

}  // namespace kiln::special
