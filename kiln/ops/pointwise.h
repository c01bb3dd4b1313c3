#pragma once
// Pointwise ops: arithmetic, math functions, activations, comparisons, logical and bitwise ops.
// Python-style numbers (Scalar arguments) take part in type promotion as PyTorch's do: an
// int32 tensor plus 2 stays int32, plus 2.5 becomes the default float dtype.
#include <optional>
#include <string>

#include "kiln/core/tensor.h"

namespace kiln {

#define KILN_DECLARE_UNARY_FN(name) Tensor name(const Tensor& self);
KILN_UNARY_METHOD_OPS(KILN_DECLARE_UNARY_FN)
#undef KILN_DECLARE_UNARY_FN
#define KILN_DECLARE_BINARY_FN(name)                    \
  Tensor name(const Tensor& self, const Tensor& other); \
  Tensor name(const Tensor& self, const Scalar& other);
KILN_BINARY_METHOD_OPS(KILN_DECLARE_BINARY_FN)
#undef KILN_DECLARE_BINARY_FN

// ---- arithmetic ----
Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
Tensor rsub(const Tensor& self, const Scalar& other);  // other - self
// rounding_mode: nullopt (true division), "trunc" or "floor".
Tensor div(const Tensor& self, const Tensor& other, std::optional<std::string> rounding_mode);
Tensor div(const Tensor& self, const Scalar& other, std::optional<std::string> rounding_mode);
Tensor floor_divide(const Tensor& self, const Tensor& other);
Tensor floor_divide(const Tensor& self, const Scalar& other);
Tensor pow(const Scalar& self, const Tensor& exponent);
Tensor round(const Tensor& self, int64_t decimals);

// ---- clamping, selection, blends ----
Tensor clamp(const Tensor& self, const std::optional<Scalar>& min,
             const std::optional<Scalar>& max = std::nullopt);
Tensor clamp(const Tensor& self, const std::optional<Tensor>& min,
             const std::optional<Tensor>& max = std::nullopt);
Tensor clamp_min(const Tensor& self, const Scalar& min);
Tensor clamp_min(const Tensor& self, const Tensor& min);
Tensor clamp_max(const Tensor& self, const Scalar& max);
Tensor clamp_max(const Tensor& self, const Tensor& max);
// In-place forms and libtorch's alias clip.
inline Tensor& clamp_(Tensor& self, const std::optional<Scalar>& min,
                      const std::optional<Scalar>& max = std::nullopt) {
  return self.clamp_(min, max);
}
inline Tensor& clamp_(Tensor& self, const std::optional<Tensor>& min,
                      const std::optional<Tensor>& max = std::nullopt) {
  return self.clamp_(min, max);
}
inline Tensor clip(const Tensor& self, const std::optional<Scalar>& min,
                   const std::optional<Scalar>& max = std::nullopt) {
  return clamp(self, min, max);
}
inline Tensor clip(const Tensor& self, const std::optional<Tensor>& min,
                   const std::optional<Tensor>& max = std::nullopt) {
  return clamp(self, min, max);
}
inline Tensor& clip_(Tensor& self, const std::optional<Scalar>& min,
                     const std::optional<Scalar>& max = std::nullopt) {
  return self.clamp_(min, max);
}
inline Tensor& clip_(Tensor& self, const std::optional<Tensor>& min,
                     const std::optional<Tensor>& max = std::nullopt) {
  return self.clamp_(min, max);
}
Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight);
Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight);
Tensor addcmul(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
               const Scalar& value = 1);
Tensor addcdiv(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
               const Scalar& value = 1);
// Elements of self where condition is true, of other elsewhere.
Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other);
Tensor where(const Tensor& condition, const Scalar& self, const Tensor& other);
Tensor where(const Tensor& condition, const Tensor& self, const Scalar& other);
Tensor where(const Tensor& condition, const Scalar& self, const Scalar& other);
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value);
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value);  // 0-dim value

// ---- special values ----
Tensor isnan(const Tensor& self);
// Same sizes and equal values (NaN differs from everything, as in torch.equal).
bool equal(const Tensor& self, const Tensor& other);
Tensor isinf(const Tensor& self);
Tensor isfinite(const Tensor& self);
// log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given (torch.logit).
Tensor logit(const Tensor& self, std::optional<double> eps = std::nullopt);
// |self - other| <= atol + rtol * |other| element-wise, infinities equal to themselves and NaNs
// equal only with equal_nan (torch.isclose / torch.allclose).
Tensor isclose(const Tensor& self, const Tensor& other, double rtol = 1e-05, double atol = 1e-08,
               bool equal_nan = false);
bool allclose(const Tensor& self, const Tensor& other, double rtol = 1e-05, double atol = 1e-08,
              bool equal_nan = false);
// NaN -> nan (0 by default), +-inf -> posinf/neginf (the dtype's extremes by default).
Tensor nan_to_num(const Tensor& self, std::optional<double> nan = std::nullopt,
                  std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);

// ---- activations (sigmoid, tanh and relu are above, with the unary methods) ----
Tensor logsigmoid(const Tensor& self);
Tensor log_sigmoid(const Tensor& self);
Tensor relu6(const Tensor& self);
Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope = 0.01);
Tensor elu(const Tensor& self, const Scalar& alpha = 1, const Scalar& scale = 1,
           const Scalar& input_scale = 1);
Tensor selu(const Tensor& self);
// approximate: "none" (exact, with erf) or "tanh".
Tensor gelu(const Tensor& self, const std::string& approximate = "none");
Tensor silu(const Tensor& self);
Tensor mish(const Tensor& self);
Tensor softplus(const Tensor& self, const Scalar& beta = 1, const Scalar& threshold = 20);
Tensor hardtanh(const Tensor& self, const Scalar& min_val = -1, const Scalar& max_val = 1);
Tensor hardsigmoid(const Tensor& self);
Tensor hardswish(const Tensor& self);
// In-place forms.
Tensor& relu_(Tensor& self);
Tensor& leaky_relu_(Tensor& self, const Scalar& negative_slope = 0.01);
Tensor& elu_(Tensor& self, const Scalar& alpha = 1, const Scalar& scale = 1,
             const Scalar& input_scale = 1);
Tensor& selu_(Tensor& self);
Tensor& silu_(Tensor& self);
Tensor& mish_(Tensor& self);
Tensor& hardtanh_(Tensor& self, const Scalar& min_val = -1, const Scalar& max_val = 1);
Tensor& hardsigmoid_(Tensor& self);
Tensor& hardswish_(Tensor& self);

}  // namespace kiln
