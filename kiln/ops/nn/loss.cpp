// Losses that PyTorch itself composes from other ops (and a few pointwise ones): built here from
// registered Kiln ops, so their gradients (and double backward) come from those ops.
#include "kiln/ops/nn/util.h"
#include "kiln/ops/ops.h"

namespace kiln {
namespace {

using nn_util::apply_reduction;

void check_same_size(const char* op, const Tensor& input, const Tensor& target) {
  KILN_CHECK(input.sym_sizes() == target.sym_sizes(), op, ": Using a target size (",
             target.sym_sizes(), ") that is different to the input size (", input.sym_sizes(),
             ") is not supported. Please ensure they have the same size.");
}

// log(x) limited below at -100, as PyTorch's binary_cross_entropy does. At x == 0 the value is
// the constant -100 and log never sees 0, so the gradient there is 0 rather than 0 * inf = nan.
Tensor clamped_log(const Tensor& x) {
  const Tensor positive = x > 0;
  return where(positive, where(positive, x, 1).log(), -100).clamp_min(-100);
}

}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  return apply_reduction((input - target).square(), reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  return apply_reduction((input - target).abs(), reduction);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, double beta) {
  KILN_CHECK(beta >= 0, "smooth_l1_loss: does not support negative values for beta, got ", beta);
  if (beta == 0) return l1_loss(input, target, reduction);
  const Tensor d = (input - target).abs();
  return apply_reduction(where(d < beta, d.square() * (0.5 / beta), d - 0.5 * beta), reduction);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta) {
  KILN_CHECK(delta > 0, "huber_loss: does not support non-positive values for delta, got ", delta);
  const Tensor d = (input - target).abs();
  return apply_reduction(where(d < delta, d.square() * 0.5, (d - 0.5 * delta) * delta), reduction);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            Reduction reduction) {
  check_same_size("binary_cross_entropy", input, target);
  {
    NoGradGuard no_grad;
    KILN_CHECK(!((input < 0) | (input > 1)).any().item<bool>(),
               "binary_cross_entropy: all elements of input should be between 0 and 1, got values "
               "in [",
               input.min().item<double>(), ", ", input.max().item<double>(), "]");
  }
  Tensor loss = -(target * clamped_log(input) + (1 - target) * clamped_log(1 - input));
  if (weight.defined()) loss = loss * weight;
  return apply_reduction(loss, reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight, const Tensor& pos_weight,
                                        Reduction reduction) {
  check_same_size("binary_cross_entropy_with_logits", input, target);
  // (1 - t) x - log_weight * log(sigmoid(x)): log_sigmoid stays finite for large |x|.
  Tensor log_sig = logsigmoid(input);
  if (pos_weight.defined()) log_sig = log_sig * ((pos_weight - 1) * target + 1);
  Tensor loss = (1 - target) * input - log_sig;
  if (weight.defined()) loss = loss * weight;
  return apply_reduction(loss, reduction);
}

Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction, bool log_target) {
  Tensor loss;
  if (log_target) {
    loss = target.exp() * (target - input);
  } else {
    // target * log(target) is 0 where target is 0 (and so is its gradient there).
    const Tensor safe = where(target > 0, target, ones_like(target));
    loss = target * safe.log() - target * input;
  }
  return apply_reduction(loss, reduction);
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             double margin, Reduction reduction) {
  KILN_CHECK(input1.dim() == input2.dim() && (input1.dim() == 1 || input1.dim() == 2),
             "cosine_embedding_loss: expected 1-D or 2-D inputs of the same rank, got ",
             input1.sym_sizes(), " and ", input2.sym_sizes());
  const double eps = 1e-12;
  const int64_t dim = input1.dim() - 1;
  const Tensor prod = (input1 * input2).sum(IntArrayRef(dim));
  const Tensor mag1 = input1.square().sum(IntArrayRef(dim)) + eps;
  const Tensor mag2 = input2.square().sum(IntArrayRef(dim)) + eps;
  const Tensor cos = prod / (mag1 * mag2).sqrt();
  const Tensor zero = zeros_like(cos);
  const Tensor pos = where(target == 1, 1 - cos, zero);
  const Tensor neg = where(target == -1, (cos - margin).clamp_min(0), zero);
  return apply_reduction(pos + neg, reduction);
}

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           double margin, Reduction reduction) {
  return apply_reduction((-target * (input1 - input2) + margin).clamp_min(0), reduction);
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           double margin, double p, double eps, bool swap, Reduction reduction) {
  const Tensor d_pos = pairwise_distance(anchor, positive, p, eps);
  Tensor d_neg = pairwise_distance(anchor, negative, p, eps);
  if (swap) d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps));
  return apply_reduction((d_pos - d_neg + margin).clamp_min(0), reduction);
}

}  // namespace kiln
