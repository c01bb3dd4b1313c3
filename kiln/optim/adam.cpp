#include "kiln/optim/adam.h"

#include <map>

#include "kiln/optim/fused.h"
#include "kiln/optim/fused_adam.h"

namespace kiln::optim {
namespace {

// One _fused_adam_ (or _fused_adamw_) call per group and device: a device backend updates the
// whole list at once.
template <class Options>
void adam_step(std::vector<OptimizerParamGroup>& groups,
               const std::function<ParamState&(const Tensor&)>& state_of, bool decoupled) {
  struct Lists {
    std::vector<Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs;
    std::vector<int64_t> steps;
  };
  for (OptimizerParamGroup& group : groups) {
    const auto& o = static_cast<const Options&>(group.options());
    FusedAdamOptions fo;
    fo.lr = o.lr(), fo.eps = o.eps(), fo.weight_decay = o.weight_decay();
    std::tie(fo.beta1, fo.beta2) = o.betas();
    fo.amsgrad = o.amsgrad(), fo.maximize = o.maximize();
    std::map<std::string, Lists> by_device;
    for (const Tensor& p : params_with_grad(group)) {
      KILN_CHECK(p.is_floating_point(), "optimizer: parameters must be floating point, got ",
                 dtype_name(p.dtype()));
      KILN_CHECK(p.grad().device() == p.device(), "optimizer: the gradient of a parameter on ",
                 p.device(), " is on ", p.grad().device());
      ParamState& s = state_of(p);
      Lists& l = by_device[p.device().str()];
      l.params.push_back(p.detach());
      l.grads.push_back(p.grad().dtype() == p.dtype() ? p.grad() : p.grad().to(p.dtype()));
      l.exp_avgs.push_back(state_buffer(s, "exp_avg", p));
      l.exp_avg_sqs.push_back(state_buffer(s, "exp_avg_sq", p));
      if (fo.amsgrad) l.max_exp_avg_sqs.push_back(state_buffer(s, "max_exp_avg_sq", p));
      l.steps.push_back(++s.step);
    }
    NoGradGuard no_grad;
    for (auto& [device, l] : by_device)
      (decoupled ? _fused_adamw_ : _fused_adam_)(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs,
                                                 l.max_exp_avg_sqs, l.steps, fo);
  }
}

}  // namespace

Tensor Adam::step(LossClosure closure) {
  Tensor loss = evaluate(closure);
  adam_step<AdamOptions>(
      param_groups_, [this](const Tensor& p) -> ParamState& { return state_of(p); }, false);
  return loss;
}

Tensor AdamW::step(LossClosure closure) {
  Tensor loss = evaluate(closure);
  adam_step<AdamWOptions>(
      param_groups_, [this](const Tensor& p) -> ParamState& { return state_of(p); }, true);
  return loss;
}

}  // namespace kiln::optim
