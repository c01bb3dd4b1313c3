#pragma once
// The activations of kiln::nn::functional beyond relu/gelu/silu/leaky_relu (kiln/nn/functional.h),
// with libtorch's FuncOptions: F::elu(x, F::ELUFuncOptions().alpha(0.5)), F::softmin(x, 1), ...
// softsign, tanhshrink, softshrink, hardshrink, threshold, softmin, celu and gumbel_softmax are
// compositions of registered ops (activation.cpp); the others forward to the op of that name.
// inplace(true) writes the result into the input, as libtorch's.
#include <optional>

#include "kiln/core/arg.h"
#include "kiln/core/tensor.h"

namespace kiln::nn::functional {

struct ReLUFuncOptions {
  ReLUFuncOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT
  KILN_ARG(bool, inplace);
};
Tensor relu(const Tensor& x, const ReLUFuncOptions& o);
using ReLU6FuncOptions = ReLUFuncOptions;
Tensor relu6(const Tensor& x, const ReLU6FuncOptions& o = {});
using SELUFuncOptions = ReLUFuncOptions;
Tensor selu(const Tensor& x, const SELUFuncOptions& o = {});

struct ELUFuncOptions {
  KILN_ARG(double, alpha) = 1.0;
  KILN_ARG(bool, inplace) = false;
};
Tensor elu(const Tensor& x, const ELUFuncOptions& o = {});
using CELUFuncOptions = ELUFuncOptions;
// max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
Tensor celu(const Tensor& x, const CELUFuncOptions& o = {});

struct SoftplusFuncOptions {
  KILN_ARG(double, beta) = 1.0;
  KILN_ARG(double, threshold) = 20.0;
};
Tensor softplus(const Tensor& x, const SoftplusFuncOptions& o = {});

struct HardtanhFuncOptions {
  KILN_ARG(double, min_val) = -1.0;
  KILN_ARG(double, max_val) = 1.0;
  KILN_ARG(bool, inplace) = false;
};
Tensor hardtanh(const Tensor& x, const HardtanhFuncOptions& o = {});

Tensor mish(const Tensor& x);
Tensor logsigmoid(const Tensor& x);
Tensor hardsigmoid(const Tensor& x);
Tensor hardswish(const Tensor& x);
Tensor softsign(const Tensor& x);    // x / (1 + |x|)
Tensor tanhshrink(const Tensor& x);  // x - tanh(x)

struct SoftshrinkFuncOptions {
  SoftshrinkFuncOptions(double lambda = 0.5) : lambda_(lambda) {}  // NOLINT
  KILN_ARG(double, lambda);
};
// x - lambda above lambda, x + lambda below -lambda, 0 between.
Tensor softshrink(const Tensor& x, const SoftshrinkFuncOptions& o = {});
using HardshrinkFuncOptions = SoftshrinkFuncOptions;
// x where |x| > lambda, else 0.
Tensor hardshrink(const Tensor& x, const HardshrinkFuncOptions& o = {});

struct ThresholdFuncOptions {
  ThresholdFuncOptions(double threshold, double value) : threshold_(threshold), value_(value) {}
  KILN_ARG(double, threshold);
  KILN_ARG(double, value);
  KILN_ARG(bool, inplace) = false;
};
// x where x > threshold, else value.
Tensor threshold(const Tensor& x, const ThresholdFuncOptions& o);

struct SoftminFuncOptions {
  SoftminFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  KILN_ARG(int64_t, dim);
  KILN_ARG(std::optional<ScalarType>, dtype) = std::nullopt;
};
Tensor softmin(const Tensor& x, const SoftminFuncOptions& o);  // softmax(-x)

struct GumbelSoftmaxFuncOptions {
  KILN_ARG(double, tau) = 1.0;
  KILN_ARG(bool, hard) = false;
  KILN_ARG(int, dim) = -1;
};
// softmax((logits + Gumbel noise) / tau); with hard, the one-hot of its argmax carrying the soft
// sample's gradient (straight-through).
Tensor gumbel_softmax(const Tensor& logits, const GumbelSoftmaxFuncOptions& o = {});

}  // namespace kiln::nn::functional
