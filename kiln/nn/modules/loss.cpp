#include "kiln/nn/modules/loss.h"

#include <ostream>

namespace kiln::nn {

namespace F = functional;

// A loss whose forward passes its inputs and options straight to the functional form.
#define KILN_DEFINE_LOSS(Name, fn, params, args)                                    \
  Name##Impl::Name##Impl(Name##Options options) : LossModule(std::move(options)) {} \
  Tensor Name##Impl::forward params { return F::fn(args, options); }

#define KILN_PRINT_PLAIN(Name) \
  void Name##Impl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::" #Name "()"; }

#define KILN_INPUT_TARGET (const Tensor& input, const Tensor& target)
#define KILN_PAIR_TARGET (const Tensor& input1, const Tensor& input2, const Tensor& target)
#define KILN_ARGS(...) __VA_ARGS__

KILN_DEFINE_LOSS(L1Loss, l1_loss, KILN_INPUT_TARGET, KILN_ARGS(input, target))
KILN_DEFINE_LOSS(MSELoss, mse_loss, KILN_INPUT_TARGET, KILN_ARGS(input, target))
KILN_DEFINE_LOSS(SmoothL1Loss, smooth_l1_loss, KILN_INPUT_TARGET, KILN_ARGS(input, target))
KILN_DEFINE_LOSS(HuberLoss, huber_loss, KILN_INPUT_TARGET, KILN_ARGS(input, target))
KILN_DEFINE_LOSS(KLDivLoss, kl_div, KILN_INPUT_TARGET, KILN_ARGS(input, target))
KILN_DEFINE_LOSS(SoftMarginLoss, soft_margin_loss, KILN_INPUT_TARGET, KILN_ARGS(input, target))
KILN_DEFINE_LOSS(MultiLabelMarginLoss, multilabel_margin_loss, KILN_INPUT_TARGET,
                 KILN_ARGS(input, target))
KILN_DEFINE_LOSS(HingeEmbeddingLoss, hinge_embedding_loss, KILN_INPUT_TARGET,
                 KILN_ARGS(input, target))
KILN_DEFINE_LOSS(PoissonNLLLoss, poisson_nll_loss, (const Tensor& log_input, const Tensor& target),
                 KILN_ARGS(log_input, target))
KILN_DEFINE_LOSS(CosineEmbeddingLoss, cosine_embedding_loss, KILN_PAIR_TARGET,
                 KILN_ARGS(input1, input2, target))
KILN_DEFINE_LOSS(MarginRankingLoss, margin_ranking_loss, KILN_PAIR_TARGET,
                 KILN_ARGS(input1, input2, target))
KILN_DEFINE_LOSS(TripletMarginLoss, triplet_margin_loss,
                 (const Tensor& anchor, const Tensor& positive, const Tensor& negative),
                 KILN_ARGS(anchor, positive, negative))
KILN_DEFINE_LOSS(TripletMarginWithDistanceLoss, triplet_margin_with_distance_loss,
                 (const Tensor& anchor, const Tensor& positive, const Tensor& negative),
                 KILN_ARGS(anchor, positive, negative))
KILN_DEFINE_LOSS(CTCLoss, ctc_loss,
                 (const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                  const Tensor& target_lengths),
                 KILN_ARGS(log_probs, targets, input_lengths, target_lengths))

KILN_PRINT_PLAIN(L1Loss)
KILN_PRINT_PLAIN(MSELoss)
KILN_PRINT_PLAIN(SmoothL1Loss)
KILN_PRINT_PLAIN(HuberLoss)
KILN_PRINT_PLAIN(KLDivLoss)
KILN_PRINT_PLAIN(SoftMarginLoss)
KILN_PRINT_PLAIN(MultiLabelMarginLoss)
KILN_PRINT_PLAIN(PoissonNLLLoss)
KILN_PRINT_PLAIN(CosineEmbeddingLoss)
KILN_PRINT_PLAIN(MarginRankingLoss)
KILN_PRINT_PLAIN(CTCLoss)

void HingeEmbeddingLossImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::HingeEmbeddingLoss(margin=" << options.margin() << ")";
}

void TripletMarginWithDistanceLossImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::TripletMarginWithDistanceLoss(margin=" << options.margin()
         << ", swap=" << (options.swap() ? "true" : "false") << ")";
}

void TripletMarginLossImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::TripletMarginLoss(margin=" << options.margin() << ", p=" << options.p()
         << ", eps=" << options.eps() << ", swap=" << (options.swap() ? "true" : "false") << ")";
}

// Weighted losses: the functional form gets the options with the weight buffer in them.
#define KILN_DEFINE_WEIGHTED_LOSS(Name, fn)                                        \
  Name##Impl::Name##Impl(Name##Options options) : LossModule(std::move(options)) { \
    weight = buffer_from("weight", this->options.weight());                        \
  }                                                                                \
  Tensor Name##Impl::forward KILN_INPUT_TARGET {                                   \
    auto o = options;                                                              \
    o.weight(weight);                                                              \
    return F::fn(input, target, o);                                                \
  }                                                                                \
  KILN_PRINT_PLAIN(Name)

KILN_DEFINE_WEIGHTED_LOSS(CrossEntropyLoss, cross_entropy)
KILN_DEFINE_WEIGHTED_LOSS(NLLLoss, nll_loss)
KILN_DEFINE_WEIGHTED_LOSS(BCELoss, binary_cross_entropy)
KILN_DEFINE_WEIGHTED_LOSS(MultiMarginLoss, multi_margin_loss)
KILN_DEFINE_WEIGHTED_LOSS(MultiLabelSoftMarginLoss, multilabel_soft_margin_loss)

BCEWithLogitsLossImpl::BCEWithLogitsLossImpl(BCEWithLogitsLossOptions options)
    : LossModule(std::move(options)) {
  weight = buffer_from("weight", this->options.weight());
  pos_weight = buffer_from("pos_weight", this->options.pos_weight());
}

Tensor BCEWithLogitsLossImpl::forward(const Tensor& input, const Tensor& target) {
  auto o = options;
  o.weight(weight).pos_weight(pos_weight);
  return F::binary_cross_entropy_with_logits(input, target, o);
}

KILN_PRINT_PLAIN(BCEWithLogitsLoss)

}  // namespace kiln::nn
