#include "kiln/optim/adagrad.h"

#include <cmath>

#include "kiln/optim/fused.h"

namespace kiln::optim {

Tensor Adagrad::step(LossClosure closure) {
  if (defer_in_capture("Adagrad::step", closure)) return {};
  Tensor loss = evaluate(closure);
  for (OptimizerParamGroup& group : param_groups_) {
    const auto& o = static_cast<const AdagradOptions&>(group.options());
    const double wd = o.weight_decay(), eps = o.eps(), sign = o.maximize() ? -1 : 1;
    for (const Tensor& p : params_with_grad(group)) {
      ParamState& s = state_of(p);
      Tensor sum = state_buffer(s, "sum", p, o.initial_accumulator_value());
      const double clr = o.lr() / (1 + static_cast<double>(s.step++) * o.lr_decay());
      fused_update<1>(p, {&sum}, [&](auto* w, const auto* g, auto st, int64_t b, int64_t e) {
        auto* acc = st[0];
        for (int64_t i = b; i < e; ++i) {
          const double d = sign * g[i] + wd * w[i];
          acc[i] += d * d;
          w[i] -= clr * d / (std::sqrt(static_cast<double>(acc[i])) + eps);
        }
      });
    }
  }
  return loss;
}

Tensor RMSprop::step(LossClosure closure) {
  if (defer_in_capture("RMSprop::step", closure)) return {};
  Tensor loss = evaluate(closure);
  for (OptimizerParamGroup& group : param_groups_) {
    const auto& o = static_cast<const RMSpropOptions&>(group.options());
    const double lr = o.lr(), alpha = o.alpha(), eps = o.eps(), wd = o.weight_decay();
    const double mom = o.momentum(), sign = o.maximize() ? -1 : 1;
    const bool centered = o.centered();
    for (const Tensor& p : params_with_grad(group)) {
      ParamState& s = state_of(p);
      ++s.step;
      Tensor sq = state_buffer(s, "square_avg", p);
      Tensor gavg = centered ? state_buffer(s, "grad_avg", p) : sq;
      Tensor buf = mom > 0 ? state_buffer(s, "momentum_buffer", p) : sq;
      fused_update<3>(p, {&sq, &gavg, &buf},
                      [&](auto* w, const auto* g, auto st, int64_t b, int64_t e) {
                        auto *sa = st[0], *ga = st[1], *mb = st[2];
                        for (int64_t i = b; i < e; ++i) {
                          const double d = sign * g[i] + wd * w[i];
                          sa[i] = alpha * sa[i] + (1 - alpha) * d * d;
                          double var = sa[i];
                          if (centered) {
                            ga[i] = alpha * ga[i] + (1 - alpha) * d;
                            var -= static_cast<double>(ga[i]) * ga[i];
                          }
                          const double step = d / (std::sqrt(var) + eps);
                          if (mom > 0) {
                            mb[i] = mom * mb[i] + step;
                            w[i] -= lr * mb[i];
                          } else {
                            w[i] -= lr * step;
                          }
                        }
                      });
    }
  }
  return loss;
}

Tensor Adamax::step(LossClosure closure) {
  if (defer_in_capture("Adamax::step", closure)) return {};
  Tensor loss = evaluate(closure);
  for (OptimizerParamGroup& group : param_groups_) {
    const auto& o = static_cast<const AdamaxOptions&>(group.options());
    const auto [beta1, beta2] = o.betas();
    const double eps = o.eps(), wd = o.weight_decay(), sign = o.maximize() ? -1 : 1;
    for (const Tensor& p : params_with_grad(group)) {
      ParamState& s = state_of(p);
      const double clr = o.lr() / (1 - std::pow(beta1, static_cast<double>(++s.step)));
      Tensor m = state_buffer(s, "exp_avg", p);
      Tensor u = state_buffer(s, "exp_inf", p);
      fused_update<2>(p, {&m, &u}, [&](auto* w, const auto* g, auto st, int64_t b, int64_t e) {
        auto *ma = st[0], *ui = st[1];
        for (int64_t i = b; i < e; ++i) {
          const double d = sign * g[i] + wd * w[i];
          ma[i] += (1 - beta1) * (d - ma[i]);
          ui[i] = std::max(beta2 * ui[i], std::abs(d) + eps);
          w[i] -= clr * ma[i] / ui[i];
        }
      });
    }
  }
  return loss;
}

}  // namespace kiln::optim
