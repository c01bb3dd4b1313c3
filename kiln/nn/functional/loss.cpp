#include "kiln/nn/functional/loss.h"

#include <cmath>
#include <numbers>

#include "kiln/core/error.h"
#include "kiln/ops/ctc.h"
#include "kiln/ops/nn/util.h"
#include "kiln/ops/ops.h"

namespace kiln::nn {

KLDivReduction::KLDivReduction(const std::string& name) {
  KILN_CHECK(name == "none" || name == "mean" || name == "sum" || name == "batchmean",
             "KLDivLoss: reduction must be 'none', 'mean', 'sum' or 'batchmean', got '", name, "'");
  batch_mean_ = name == "batchmean";
  reduction_ = name == "none" ? Reduction::None : name == "sum" ? Reduction::Sum : Reduction::Mean;
}

}  // namespace kiln::nn

namespace kiln::nn::functional {
namespace {

using nn_util::apply_reduction;

// Views an unbatched (C) input and its () target as a batch of one; `batched` says which it was.
struct Batch {
  Tensor input, target;
  bool batched;
};
Batch as_batch(const char* fn, const Tensor& input, const Tensor& target, bool target_like_input) {
  KILN_CHECK(input.dim() == 1 || input.dim() == 2, fn,
             ": expected input of shape (N, C) or (C), got ", input.sizes());
  const int64_t target_dim = target_like_input ? input.dim() : input.dim() - 1;
  KILN_CHECK(target.dim() == target_dim && (target_dim == 0 || target.size(0) == input.size(0)), fn,
             ": target of shape ", target.sizes(), " does not match input of shape ",
             input.sizes());
  KILN_CHECK(!is_floating_point(target.scalar_type()), fn,
             ": expected integer class indices as target, got ", target.scalar_type());
  if (input.dim() == 2) return {input, target, true};
  return {input.unsqueeze(0), target.unsqueeze(0), false};
}

// Per-sample losses back in the input's batching, then reduced.
Tensor reduce_per_sample(const Tensor& per_sample, bool batched, Reduction reduction) {
  return apply_reduction(batched ? per_sample : per_sample.squeeze({0}), reduction);
}

}  // namespace

Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options) {
  return kiln::l1_loss(input, target, options.reduction());
}

Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options) {
  return kiln::mse_loss(input, target, options.reduction());
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      const SmoothL1LossFuncOptions& options) {
  return kiln::smooth_l1_loss(input, target, options.reduction(), options.beta().value_or(1.0));
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& options) {
  return kiln::huber_loss(input, target, options.reduction(), options.delta());
}

Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& options) {
  const KLDivReduction& r = options.reduction();
  Tensor loss = kiln::kl_div(input, target, r.reduction(), options.log_target());
  if (!r.is_batch_mean() || input.dim() == 0) return loss;
  return loss / input.size(0);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const BinaryCrossEntropyFuncOptions& options) {
  return kiln::binary_cross_entropy(input, target, options.weight(), options.reduction());
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options) {
  return kiln::binary_cross_entropy_with_logits(input, target, options.weight(),
                                                options.pos_weight(), options.reduction());
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options) {
  return kiln::nll_loss(input, target, options.weight(), options.reduction(),
                        options.ignore_index());
}

Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const CrossEntropyFuncOptions& options) {
  return kiln::cross_entropy(input, target, options.weight(), options.reduction(),
                             options.ignore_index(), options.label_smoothing());
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             const CosineEmbeddingLossFuncOptions& options) {
  return kiln::cosine_embedding_loss(input1, input2, target, options.margin(), options.reduction());
}

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           const MarginRankingLossFuncOptions& options) {
  return kiln::margin_ranking_loss(input1, input2, target, options.margin(), options.reduction());
}

Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive,
                                         const Tensor& negative,
                                         const TripletMarginWithDistanceLossFuncOptions& options) {
  KILN_CHECK(options.margin() > 0,
             "triplet_margin_with_distance_loss: margin must be greater "
             "than 0, got ",
             options.margin());
  const auto distance = options.distance_function().value_or(
      [](const Tensor& a, const Tensor& b) { return pairwise_distance(a, b); });
  const Tensor d_pos = distance(anchor, positive);
  Tensor d_neg = distance(anchor, negative);
  if (options.swap()) d_neg = minimum(d_neg, distance(positive, negative));
  return apply_reduction((d_pos - d_neg + options.margin()).clamp_min(0), options.reduction());
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           const TripletMarginLossFuncOptions& options) {
  return kiln::triplet_margin_loss(anchor, positive, negative, options.margin(), options.p(),
                                   options.eps(), options.swap(), options.reduction());
}

Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target,
                            const HingeEmbeddingLossFuncOptions& options) {
  Tensor zero = zeros_like(input);
  Tensor below_margin = kiln::where(target.ne(1), (options.margin() - input).clamp_min(0), zero);
  Tensor positive = kiln::where(target.ne(-1), input, zero);
  return apply_reduction(below_margin + positive, options.reduction());
}

Tensor soft_margin_loss(const Tensor& input, const Tensor& target,
                        const SoftMarginLossFuncOptions& options) {
  return apply_reduction((-target * input).exp().log1p(), options.reduction());
}

Tensor multi_margin_loss(const Tensor& input, const Tensor& target,
                         const MultiMarginLossFuncOptions& options) {
  KILN_CHECK(options.p() == 1 || options.p() == 2,
             "multi_margin_loss: only p == 1 and p == 2 are supported, got p=", options.p());
  const Batch b = as_batch("multi_margin_loss", input, target, /*target_like_input=*/false);
  const int64_t classes = b.input.size(1);
  Tensor index = b.target.to(kInt64).unsqueeze(1);
  Tensor target_score = b.input.gather(1, index);
  Tensor margins = (options.margin() - target_score + b.input).clamp_min(0);
  if (options.p() == 2) margins = margins * margins;
  // The target class itself contributes nothing.
  margins = margins * (1 - kiln::one_hot(index.squeeze({1}), classes).to(margins.scalar_type()));
  if (options.weight().defined())
    margins = margins * options.weight().index_select(0, index.view({-1})).unsqueeze(1);
  return reduce_per_sample(margins.sum({1}) / classes, b.batched, options.reduction());
}

Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target,
                              const MultilabelMarginLossFuncOptions& options) {
  const Batch b = as_batch("multilabel_margin_loss", input, target, /*target_like_input=*/true);
  const int64_t classes = b.input.size(1);
  const ScalarType dtype = b.input.scalar_type();
  Tensor labels = b.target.to(kInt64);
  // A row's targets end at its first -1.
  Tensor listed = labels.eq(-1).cumsum(1).eq(0);
  Tensor index = kiln::where(listed, labels, zeros_like(labels));
  // is_target[n, c]: class c is one of row n's targets.
  Tensor is_target =
      (kiln::one_hot(index, classes) * listed.unsqueeze(2).to(kInt64)).sum({1}).gt(0);
  Tensor target_score = b.input.gather(1, index);  // (N, C): x[y_j], used where listed
  Tensor hinge = (1 - target_score.unsqueeze(2) + b.input.unsqueeze(1)).clamp_min(0);
  Tensor counted = listed.unsqueeze(2).to(dtype) * is_target.logical_not().unsqueeze(1).to(dtype);
  return reduce_per_sample((hinge * counted).sum({1, 2}) / classes, b.batched, options.reduction());
}

Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   const MultilabelSoftMarginLossFuncOptions& options) {
  Tensor loss = -(target * kiln::log_sigmoid(input) + (1 - target) * kiln::log_sigmoid(-input));
  if (options.weight().defined()) loss = loss * options.weight();
  const int64_t class_dim = input.dim() - 1;
  return apply_reduction(loss.sum({class_dim}) / input.size(class_dim), options.reduction());
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target,
                        const PoissonNLLLossFuncOptions& options) {
  Tensor loss = options.log_input() ? input.exp() - target * input
                                    : input - target * (input + options.eps()).log();
  if (options.full()) {
    Tensor stirling = target * target.log() - target + 0.5 * (2 * std::numbers::pi * target).log();
    loss = loss + kiln::where(target.gt(1), stirling, zeros_like(stirling));
  }
  return apply_reduction(loss, options.reduction());
}

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, const CTCLossFuncOptions& options) {
  return kiln::ctc_loss(log_probs, targets, input_lengths, target_lengths, options.blank(),
                        options.reduction(), options.zero_infinity());
}

}  // namespace kiln::nn::functional
