#pragma once
// Reductions over any set of dims (libtorch's names and semantics): sum, mean, prod, amax,
// amin, max/min, argmax/argmin, var, std, var_mean, std_mean, norm, logsumexp, all, any,
// count_nonzero; the scans cumsum and cumprod; softmax and log_softmax.
#include <optional>
#include <string_view>
#include <tuple>

#include "kiln/core/tensor.h"

namespace kiln {

// Integer and bool inputs sum (and multiply) in int64 unless a dtype is given.
Tensor sum(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt);
Tensor sum(const Tensor& self, OptionalIntArrayRef dim, bool keepdim = false,
           std::optional<ScalarType> dtype = std::nullopt);
// mean of an integer tensor needs a floating dtype, as in PyTorch.
Tensor mean(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt);
Tensor mean(const Tensor& self, OptionalIntArrayRef dim, bool keepdim = false,
            std::optional<ScalarType> dtype = std::nullopt);
Tensor prod(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt);
Tensor prod(const Tensor& self, int64_t dim, bool keepdim = false,
            std::optional<ScalarType> dtype = std::nullopt);

Tensor amax(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false);
Tensor amin(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false);
Tensor max(const Tensor& self);
Tensor min(const Tensor& self);
// (values, indices); on ties the index of the first extreme value.
std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);

// Variance with Bessel's correction (unbiased) or an explicit `correction`: the divisor is
// max(0, N - correction). dim nullopt or {} reduces all dims. The overload set is libtorch's:
// var(x, 1) is the variance over dim 1 and var(x, true) the unbiased one over all dims.
#define KILN_DECLARE_VAR_FORMS(R, name)                                                     \
  R name(const Tensor& self, bool unbiased);                                                \
  R name(const Tensor& self, OptionalIntArrayRef dim, bool unbiased, bool keepdim = false); \
  R name(const Tensor& self, OptionalIntArrayRef dim = std::nullopt,                        \
         const std::optional<Scalar>& correction = std::nullopt, bool keepdim = false);     \
  R name(const Tensor& self, int dim);
KILN_DECLARE_VAR_FORMS(Tensor, var)
KILN_DECLARE_VAR_FORMS(Tensor, std)
namespace detail {
using TensorPair = std::tuple<Tensor, Tensor>;
}
KILN_DECLARE_VAR_FORMS(detail::TensorPair, var_mean)
KILN_DECLARE_VAR_FORMS(detail::TensorPair, std_mean)
#undef KILN_DECLARE_VAR_FORMS

// Vector p-norm over `dim` (all dims when empty): p = 0 (count of nonzeros), 1, 2, inf, -inf
// or any other p; "fro" is the 2-norm of the flattened dims.
Tensor norm(const Tensor& self, const Scalar& p = 2);
Tensor norm(const Tensor& self, const std::optional<Scalar>& p, IntArrayRef dim,
            bool keepdim = false);
Tensor norm(const Tensor& self, const std::optional<Scalar>& p, IntArrayRef dim, bool keepdim,
            ScalarType dtype);
Tensor frobenius_norm(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false);
namespace detail {
Tensor named_norm(const Tensor& self, std::string_view p, IntArrayRef dim, bool keepdim);
}
// norm(x, "fro", dim): takes string literals only, so that norm(x, 0) stays the 0-norm.
template <size_t N>
Tensor norm(const Tensor& self, const char (&p)[N], IntArrayRef dim = {}, bool keepdim = false) {
  return detail::named_norm(self, p, dim, keepdim);
}
Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim = false);

// all/any give bool (uint8 for uint8 inputs, as PyTorch).
Tensor all(const Tensor& self);
Tensor all(const Tensor& self, int64_t dim, bool keepdim = false);
Tensor all(const Tensor& self, IntArrayRef dim, bool keepdim = false);
Tensor any(const Tensor& self);
Tensor any(const Tensor& self, int64_t dim, bool keepdim = false);
Tensor any(const Tensor& self, IntArrayRef dim, bool keepdim = false);
Tensor count_nonzero(const Tensor& self, IntArrayRef dim = {});
Tensor count_nonzero(const Tensor& self, int64_t dim);

Tensor cumsum(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor cumprod(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);

}  // namespace kiln
