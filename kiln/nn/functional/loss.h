#pragma once
// The loss functions of kiln::nn::functional (libtorch's F::mse_loss, F::cross_entropy, ...),
// taking the options of kiln/nn/options/loss.h. The losses Kiln has as ops forward to them;
// hinge_embedding_loss, soft_margin_loss, multi_margin_loss, multilabel_margin_loss,
// multilabel_soft_margin_loss and poisson_nll_loss are compositions of differentiable ops.
#include "kiln/nn/options/loss.h"

namespace kiln::nn::functional {

Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options = {});
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options = {});
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      const SmoothL1LossFuncOptions& options = {});
Tensor huber_loss(const Tensor& input, const Tensor& target,
                  const HuberLossFuncOptions& options = {});
// input: log-probabilities; target: probabilities (log-probabilities with log_target).
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& options = {});
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const BinaryCrossEntropyFuncOptions& options = {});
Tensor binary_cross_entropy_with_logits(
    const Tensor& input, const Tensor& target,
    const BinaryCrossEntropyWithLogitsFuncOptions& options = {});
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options = {});
Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const CrossEntropyFuncOptions& options = {});
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             const CosineEmbeddingLossFuncOptions& options = {});
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           const MarginRankingLossFuncOptions& options = {});
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           const TripletMarginLossFuncOptions& options = {});
Tensor triplet_margin_with_distance_loss(
    const Tensor& anchor, const Tensor& positive, const Tensor& negative,
    const TripletMarginWithDistanceLossFuncOptions& options = {});
// target: 1 or -1. Per element: input where target is 1, max(0, margin - input) where it is -1.
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target,
                            const HingeEmbeddingLossFuncOptions& options = {});
// target: 1 or -1. Per element: log(1 + exp(-target * input)).
Tensor soft_margin_loss(const Tensor& input, const Tensor& target,
                        const SoftMarginLossFuncOptions& options = {});
// input (N, C) or (C); target (N) or () class indices. Per sample:
// sum over classes i != y of weight[y] * max(0, margin - x[y] + x[i])^p, divided by C.
Tensor multi_margin_loss(const Tensor& input, const Tensor& target,
                         const MultiMarginLossFuncOptions& options = {});
// input (N, C) or (C); target of the same shape: each row's class indices, ended by the first -1.
// Per sample: sum over its targets j and non-target classes i of max(0, 1 - (x[j] - x[i])) / C.
Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target,
                              const MultilabelMarginLossFuncOptions& options = {});
// target: 0/1 labels of input's shape. Per sample: the mean over classes of the (weighted)
// binary cross entropy of sigmoid(input).
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   const MultilabelSoftMarginLossFuncOptions& options = {});
// Negative log likelihood of target under Poisson(rate): rate = exp(input) with log_input, else
// input. full adds Stirling's approximation of log(target!) for targets above 1.
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target,
                        const PoissonNLLLossFuncOptions& options = {});
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, const CTCLossFuncOptions& options = {});

}  // namespace kiln::nn::functional
