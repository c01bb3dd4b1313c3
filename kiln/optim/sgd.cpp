#include "kiln/optim/sgd.h"

#include "kiln/optim/fused.h"
#include "kiln/optim/fused_sgd.h"

namespace kiln::optim {

// One _fused_sgd_ call per group and device: a device backend updates the whole list at once.
Tensor SGD::step(LossClosure closure) {
  if (defer_in_capture("SGD::step", closure)) return {};
  Tensor loss = evaluate(closure);
  for (OptimizerParamGroup& group : param_groups_) {
    const auto& o = static_cast<const SGDOptions&>(group.options());
    KILN_CHECK(!o.nesterov() || (o.momentum() > 0 && o.dampening() == 0),
               "SGD: Nesterov momentum requires a momentum and zero dampening");
    FusedSGDOptions fo;
    fo.lr = o.lr(), fo.momentum = o.momentum(), fo.dampening = o.dampening();
    fo.weight_decay = o.weight_decay(), fo.nesterov = o.nesterov(), fo.maximize = o.maximize();
    for (const auto& [device, ps] : params_by_device(group)) {
      std::vector<Tensor> params, grads, buffers;
      std::vector<int64_t> steps;
      for (const Tensor& p : ps) {
        ParamState& s = state_of(p);
        params.push_back(p.detach());
        grads.push_back(grad_of(p));
        if (fo.momentum != 0) buffers.push_back(state_buffer(s, "momentum_buffer", p));
        steps.push_back(++s.step);
      }
      NoGradGuard no_grad;
      _fused_sgd_(params, grads, buffers, steps, fo);
    }
  }
  return loss;
}

}  // namespace kiln::optim
