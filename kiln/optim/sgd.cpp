#include "kiln/optim/sgd.h"

#include "kiln/optim/fused.h"

namespace kiln::optim {

Tensor SGD::step(LossClosure closure) {
  Tensor loss = evaluate(closure);
  for (OptimizerParamGroup& group : param_groups_) {
    const auto& o = static_cast<const SGDOptions&>(group.options());
    KILN_CHECK(!o.nesterov() || (o.momentum() > 0 && o.dampening() == 0),
               "SGD: Nesterov momentum requires a momentum and zero dampening");
    const double lr = o.lr(), wd = o.weight_decay(), mom = o.momentum(), damp = o.dampening();
    const double sign = o.maximize() ? -1 : 1;
    const bool nesterov = o.nesterov();
    for (const Tensor& p : params_with_grad(group)) {
      ParamState& s = state_of(p);
      const bool first = s.step++ == 0;
      if (mom == 0) {
        fused_update<0>(p, {}, [&](auto* w, const auto* g, auto, int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) w[i] -= lr * (sign * g[i] + wd * w[i]);
        });
        continue;
      }
      Tensor buf = state_buffer(s, "momentum_buffer", p);
      fused_update<1>(p, {&buf}, [&](auto* w, const auto* g, auto st, int64_t b, int64_t e) {
        auto* m = st[0];
        for (int64_t i = b; i < e; ++i) {
          const double d = sign * g[i] + wd * w[i];
          const double v = first ? d : mom * m[i] + (1 - damp) * d;
          m[i] = v;
          w[i] -= lr * (nesterov ? d + mom * v : v);
        }
      });
    }
  }
  return loss;
}

}  // namespace kiln::optim
