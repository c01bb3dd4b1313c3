#pragma once
// Loss modules, as libtorch has every loss: nn::MSELoss, nn::CrossEntropyLoss, ... Each holds its
// options (kiln/nn/options/loss.h) and calls the functional form (kiln/nn/functional/loss.h);
// class weights are registered as the buffer "weight" (and "pos_weight" for BCEWithLogitsLoss)
// so that to() and state_dict() see them.
#include "kiln/nn/functional/loss.h"
#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"
#include "kiln/nn/options/loss.h"

namespace kiln::nn {

// The state every loss module shares: its options, and the buffers registered from them.
template <class Options>
class LossModule : public Module {
 public:
  explicit LossModule(Options options) : options(std::move(options)) {}
  Options options;

 protected:
  // Registers a defined option tensor as a buffer; the returned tensor is the buffer.
  Tensor buffer_from(const char* name, const Tensor& t) {
    return t.defined() ? register_buffer(name, t) : t;
  }
};

#define KILN_DECLARE_LOSS(Name, Options, ...)               \
  class Name##Impl : public LossModule<Options> {           \
    KILN_MODULE_CLONE(Name##Impl)                           \
   public:                                                  \
    explicit Name##Impl(Options options = {});              \
    Tensor forward(__VA_ARGS__);                            \
    void pretty_print(std::ostream& stream) const override; \
  };                                                        \
  KILN_MODULE(Name)

#define KILN_INPUT_TARGET const Tensor &input, const Tensor &target
#define KILN_PAIR_TARGET const Tensor &input1, const Tensor &input2, const Tensor &target

KILN_DECLARE_LOSS(L1Loss, L1LossOptions, KILN_INPUT_TARGET);
KILN_DECLARE_LOSS(MSELoss, MSELossOptions, KILN_INPUT_TARGET);
KILN_DECLARE_LOSS(SmoothL1Loss, SmoothL1LossOptions, KILN_INPUT_TARGET);
KILN_DECLARE_LOSS(HuberLoss, HuberLossOptions, KILN_INPUT_TARGET);
KILN_DECLARE_LOSS(KLDivLoss, KLDivLossOptions, KILN_INPUT_TARGET);
KILN_DECLARE_LOSS(SoftMarginLoss, SoftMarginLossOptions, KILN_INPUT_TARGET);
KILN_DECLARE_LOSS(MultiLabelMarginLoss, MultiLabelMarginLossOptions, KILN_INPUT_TARGET);
KILN_DECLARE_LOSS(HingeEmbeddingLoss, HingeEmbeddingLossOptions, KILN_INPUT_TARGET);
KILN_DECLARE_LOSS(PoissonNLLLoss, PoissonNLLLossOptions, const Tensor& log_input,
                  const Tensor& target);
KILN_DECLARE_LOSS(CosineEmbeddingLoss, CosineEmbeddingLossOptions, KILN_PAIR_TARGET);
KILN_DECLARE_LOSS(MarginRankingLoss, MarginRankingLossOptions, KILN_PAIR_TARGET);
KILN_DECLARE_LOSS(TripletMarginLoss, TripletMarginLossOptions, const Tensor& anchor,
                  const Tensor& positive, const Tensor& negative);
KILN_DECLARE_LOSS(TripletMarginWithDistanceLoss, TripletMarginWithDistanceLossOptions,
                  const Tensor& anchor, const Tensor& positive, const Tensor& negative);
KILN_DECLARE_LOSS(CTCLoss, CTCLossOptions, const Tensor& log_probs, const Tensor& targets,
                  const Tensor& input_lengths, const Tensor& target_lengths);

// Weighted losses keep the weight buffer as a member.
#define KILN_DECLARE_WEIGHTED_LOSS(Name, Options)           \
  class Name##Impl : public LossModule<Options> {           \
    KILN_MODULE_CLONE(Name##Impl)                           \
   public:                                                  \
    explicit Name##Impl(Options options = {});              \
    Tensor forward(KILN_INPUT_TARGET);                      \
    void pretty_print(std::ostream& stream) const override; \
    Tensor weight;                                          \
  };                                                        \
  KILN_MODULE(Name)

KILN_DECLARE_WEIGHTED_LOSS(CrossEntropyLoss, CrossEntropyLossOptions);
KILN_DECLARE_WEIGHTED_LOSS(NLLLoss, NLLLossOptions);
KILN_DECLARE_WEIGHTED_LOSS(BCELoss, BCELossOptions);
KILN_DECLARE_WEIGHTED_LOSS(MultiMarginLoss, MultiMarginLossOptions);
KILN_DECLARE_WEIGHTED_LOSS(MultiLabelSoftMarginLoss, MultiLabelSoftMarginLossOptions);

class BCEWithLogitsLossImpl : public LossModule<BCEWithLogitsLossOptions> {
  KILN_MODULE_CLONE(BCEWithLogitsLossImpl)
 public:
  explicit BCEWithLogitsLossImpl(BCEWithLogitsLossOptions options = {});
  Tensor forward(KILN_INPUT_TARGET);
  void pretty_print(std::ostream& stream) const override;
  Tensor weight, pos_weight;
};
KILN_MODULE(BCEWithLogitsLoss);

#undef KILN_DECLARE_WEIGHTED_LOSS
#undef KILN_DECLARE_LOSS
#undef KILN_PAIR_TARGET
#undef KILN_INPUT_TARGET

}  // namespace kiln::nn
