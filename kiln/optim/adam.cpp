#include "kiln/optim/adam.h"

#include <cmath>

#include "kiln/optim/fused.h"

namespace kiln::optim {
namespace {

template <class Options>
void adam_step(std::vector<OptimizerParamGroup>& groups,
               const std::function<ParamState&(const Tensor&)>& state_of, bool decoupled) {
  for (OptimizerParamGroup& group : groups) {
    const auto& o = static_cast<const Options&>(group.options());
    const double lr = o.lr(), eps = o.eps(), wd = o.weight_decay();
    const auto [beta1, beta2] = o.betas();
    const double sign = o.maximize() ? -1 : 1;
    const bool amsgrad = o.amsgrad();
    for (const Tensor& p : params_with_grad(group)) {
      ParamState& s = state_of(p);
      const double t = static_cast<double>(++s.step);
      const double step_size = lr / (1 - std::pow(beta1, t));
      const double inv_sqrt_bc2 = 1 / std::sqrt(1 - std::pow(beta2, t));
      const double decay = decoupled ? 1 - lr * wd : 1;
      const double l2 = decoupled ? 0 : wd;
      Tensor m = state_buffer(s, "exp_avg", p);
      Tensor v = state_buffer(s, "exp_avg_sq", p);
      Tensor vmax = amsgrad ? state_buffer(s, "max_exp_avg_sq", p) : v;
      if (runs_on_device(p)) {
        // The same update as device pointwise ops, without host copies.
        NoGradGuard no_grad;
        Tensor d = sign < 0 ? -p.grad() : p.grad();
        if (l2 != 0) d = d + p * l2;
        if (decay != 1) p.mul_(decay);
        m.lerp_(d, 1 - beta1);
        v.mul_(beta2).addcmul_(d, d, 1 - beta2);
        if (amsgrad) vmax.copy_(maximum(vmax, v));
        p.addcdiv_(m, vmax.sqrt().mul_(inv_sqrt_bc2).add_(eps), -step_size);
        continue;
      }
      // In the parameter's compute dtype, as PyTorch does, so that the loops vectorise (this
      // file is built with -fno-math-errno for the square roots).
      fused_update<3>(
          p, {&m, &v, &vmax}, [&]<class T>(T* w, const T* g, auto st, int64_t b, int64_t e) {
            T *ma = st[0], *va = st[1], *vm = st[2];
            const T c_decay = decay, c_sign = sign, c_l2 = l2, c_step = step_size, c_eps = eps;
            const T c_bc2 = inv_sqrt_bc2, c_beta1 = 1 - beta1, c_beta2 = beta2, c_1mb2 = 1 - beta2;
            auto update = [&](int64_t i) {
              const T d = c_sign * g[i] + c_l2 * w[i];
              ma[i] += c_beta1 * (d - ma[i]);
              va[i] = c_beta2 * va[i] + c_1mb2 * d * d;
            };
            if (amsgrad) {
              for (int64_t i = b; i < e; ++i) {
                update(i);
                vm[i] = std::max(vm[i], va[i]);
                w[i] = w[i] * c_decay - c_step * ma[i] / (std::sqrt(vm[i]) * c_bc2 + c_eps);
              }
            } else {
              for (int64_t i = b; i < e; ++i) {
                update(i);
                w[i] = w[i] * c_decay - c_step * ma[i] / (std::sqrt(va[i]) * c_bc2 + c_eps);
              }
            }
          });
    }
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
