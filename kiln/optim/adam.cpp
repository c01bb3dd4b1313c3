#include "kiln/optim/adam.h"

#include "kiln/optim/fused.h"
#include "kiln/optim/fused_adam.h"

namespace kiln::optim {
namespace {

template <class Options>
void adam_step(std::vector<OptimizerParamGroup>& groups,
               const std::function<ParamState&(const Tensor&)>& state_of, bool decoupled) {
  for (OptimizerParamGroup& group : groups) {
    const auto& o = static_cast<const Options&>(group.options());
    FusedAdamOptions fo;
    fo.lr = o.lr(), fo.eps = o.eps(), fo.weight_decay = o.weight_decay();
    std::tie(fo.beta1, fo.beta2) = o.betas();
    fo.amsgrad = o.amsgrad(), fo.maximize = o.maximize();
    for (const auto& [device, ps] : params_by_device(group)) {
      std::vector<Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs;
      std::vector<int64_t> steps;
      for (const Tensor& p : ps) {
        ParamState& s = state_of(p);
        params.push_back(p.detach());
        grads.push_back(grad_of(p));
        exp_avgs.push_back(state_buffer(s, "exp_avg", p));
        exp_avg_sqs.push_back(state_buffer(s, "exp_avg_sq", p));
        if (fo.amsgrad) max_exp_avg_sqs.push_back(state_buffer(s, "max_exp_avg_sq", p));
        steps.push_back(++s.step);
      }
      NoGradGuard no_grad;
      (decoupled ? _fused_adamw_ : _fused_adam_)(params, grads, exp_avgs, exp_avg_sqs,
                                                 max_exp_avg_sqs, steps, fo);
    }
  }
}

}  // namespace

Tensor Adam::step(LossClosure closure) {
  if (defer_in_capture("Adam::step", closure)) return {};
  Tensor loss = evaluate(closure);
  adam_step<AdamOptions>(
      param_groups_, [this](const Tensor& p) -> ParamState& { return state_of(p); }, false);
  return loss;
}

Tensor AdamW::step(LossClosure closure) {
  if (defer_in_capture("AdamW::step", closure)) return {};
  Tensor loss = evaluate(closure);
  adam_step<AdamWOptions>(
      param_groups_, [this](const Tensor& p) -> ParamState& { return state_of(p); }, true);
  return loss;
}

}  // namespace kiln::optim
