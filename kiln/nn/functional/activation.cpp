#include "kiln/nn/functional/activation.h"

#include <limits>

#include "kiln/ops/ops.h"

namespace kiln::nn::functional {
namespace {
// The result, written into x when inplace (libtorch's inplace options).
Tensor maybe_inplace(const Tensor& x, const Tensor& result, bool inplace) {
  if (!inplace) return result;
  x.copy_(result);
  return x;
}
}  // namespace

Tensor relu(const Tensor& x, const ReLUFuncOptions& o) {
  if (!o.inplace()) return x.relu();
  Tensor t = x;
  return relu_(t);
}
Tensor relu6(const Tensor& x, const ReLU6FuncOptions& o) {
  return maybe_inplace(x, kiln::relu6(x), o.inplace());
}
Tensor selu(const Tensor& x, const SELUFuncOptions& o) {
  if (!o.inplace()) return kiln::selu(x);
  Tensor t = x;
  return selu_(t);
}
Tensor elu(const Tensor& x, const ELUFuncOptions& o) {
  if (!o.inplace()) return kiln::elu(x, o.alpha());
  Tensor t = x;
  return elu_(t, o.alpha());
}
Tensor celu(const Tensor& x, const CELUFuncOptions& o) {
  KILN_CHECK(o.alpha() != 0, "celu: ZeroDivisionError: alpha cannot be 0 for CELU");
  if (!o.inplace()) return kiln::elu(x, o.alpha(), 1, 1 / o.alpha());
  Tensor t = x;
  return elu_(t, o.alpha(), 1, 1 / o.alpha());
}
Tensor softplus(const Tensor& x, const SoftplusFuncOptions& o) {
  return kiln::softplus(x, o.beta(), o.threshold());
}
Tensor hardtanh(const Tensor& x, const HardtanhFuncOptions& o) {
  if (!o.inplace()) return kiln::hardtanh(x, o.min_val(), o.max_val());
  Tensor t = x;
  return hardtanh_(t, o.min_val(), o.max_val());
}
Tensor mish(const Tensor& x) { return kiln::mish(x); }
Tensor logsigmoid(const Tensor& x) { return kiln::logsigmoid(x); }
Tensor hardsigmoid(const Tensor& x) { return kiln::hardsigmoid(x); }
Tensor hardswish(const Tensor& x) { return kiln::hardswish(x); }
Tensor softsign(const Tensor& x) { return x / (x.abs() + 1); }
Tensor tanhshrink(const Tensor& x) { return x - x.tanh(); }

Tensor softshrink(const Tensor& x, const SoftshrinkFuncOptions& o) {
  const double l = o.lambda();
  KILN_CHECK(l >= 0, "softshrink: lambda must be greater or equal to 0, but found to be ", l);
  return where(x > l, x - l, where(x < -l, x + l, 0.0));
}
Tensor hardshrink(const Tensor& x, const HardshrinkFuncOptions& o) {
  return where(x.abs() > o.lambda(), x, 0.0);
}
Tensor threshold(const Tensor& x, const ThresholdFuncOptions& o) {
  return maybe_inplace(x, where(x > o.threshold(), x, o.value()), o.inplace());
}
Tensor softmin(const Tensor& x, const SoftminFuncOptions& o) {
  return kiln::softmax(-x, o.dim(), o.dtype());
}

Tensor gumbel_softmax(const Tensor& logits, const GumbelSoftmaxFuncOptions& o) {
  // -log(E) with E ~ Exp(1) is Gumbel(0, 1); E = -log(U), U ~ U(0, 1).
  const Tensor uniform = rand_like(logits).clamp_min(std::numeric_limits<float>::min());
  const Tensor gumbels = -(-uniform.log()).log();
  const Tensor soft = kiln::softmax((logits + gumbels) / o.tau(), o.dim());
  if (!o.hard()) return soft;
  const Tensor index = soft.argmax(o.dim(), /*keepdim=*/true);
  const Tensor hard = zeros_like(logits).scatter(o.dim(), index, 1.0);
  return hard - soft.detach() + soft;
}

}  // namespace kiln::nn::functional
