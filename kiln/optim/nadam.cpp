#include "kiln/optim/nadam.h"

#include <cmath>

#include "kiln/optim/fused.h"

namespace kiln::optim {

Tensor NAdam::step(LossClosure closure) {
  if (defer_in_capture("NAdam::step", closure)) return {};
  Tensor loss = evaluate(closure);
  for (OptimizerParamGroup& group : param_groups_) {
    const auto& o = static_cast<const NAdamOptions&>(group.options());
    const auto [beta1, beta2] = o.betas();
    const double lr = o.lr(), eps = o.eps(), wd = o.weight_decay();
    const bool decoupled = o.decoupled_weight_decay();
    for (const Tensor& p : params_with_grad(group)) {
      ParamState& s = state_of(p);
      const double t = static_cast<double>(++s.step);
      const double mu = beta1 * (1 - 0.5 * std::pow(0.96, t * o.momentum_decay()));
      const double mu_next = beta1 * (1 - 0.5 * std::pow(0.96, (t + 1) * o.momentum_decay()));
      double& mu_product = s.scalars.try_emplace("mu_product", 1.0).first->second;
      mu_product *= mu;
      const double bc2 = 1 - std::pow(beta2, t);
      const double grad_coef = lr * (1 - mu) / (1 - mu_product);
      const double avg_coef = lr * mu_next / (1 - mu_product * mu_next);
      const double decay = decoupled ? 1 - lr * wd : 1, l2 = decoupled ? 0 : wd;
      Tensor m = state_buffer(s, "exp_avg", p);
      Tensor v = state_buffer(s, "exp_avg_sq", p);
      fused_update<2>(p, {&m, &v}, [&](auto* w, const auto* g, auto st, int64_t b, int64_t e) {
        auto *ma = st[0], *va = st[1];
        for (int64_t i = b; i < e; ++i) {
          const double d = g[i] + l2 * w[i];
          update_moments(ma[i], va[i], d, beta1, beta2);
          const double denom = std::sqrt(va[i] / bc2) + eps;
          w[i] = w[i] * decay - grad_coef * d / denom - avg_coef * ma[i] / denom;
        }
      });
    }
  }
  return loss;
}

Tensor RAdam::step(LossClosure closure) {
  if (defer_in_capture("RAdam::step", closure)) return {};
  Tensor loss = evaluate(closure);
  for (OptimizerParamGroup& group : param_groups_) {
    const auto& o = static_cast<const RAdamOptions&>(group.options());
    const auto [beta1, beta2] = o.betas();
    const double lr = o.lr(), eps = o.eps(), wd = o.weight_decay();
    const bool decoupled = o.decoupled_weight_decay();
    for (const Tensor& p : params_with_grad(group)) {
      ParamState& s = state_of(p);
      const double t = static_cast<double>(++s.step);
      const double bc1 = 1 - std::pow(beta1, t), bc2 = 1 - std::pow(beta2, t);
      const double rho_inf = 2 / (1 - beta2) - 1;
      const double rho_t = rho_inf - 2 * t * std::pow(beta2, t) / bc2;
      // With too few steps the variance estimate is not trusted: plain momentum SGD.
      const bool rectify = rho_t > 5;
      const double rect = rectify ? std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                                              ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                                  : 0;
      const double decay = decoupled ? 1 - lr * wd : 1, l2 = decoupled ? 0 : wd;
      Tensor m = state_buffer(s, "exp_avg", p);
      Tensor v = state_buffer(s, "exp_avg_sq", p);
      fused_update<2>(p, {&m, &v}, [&](auto* w, const auto* g, auto st, int64_t b, int64_t e) {
        auto *ma = st[0], *va = st[1];
        for (int64_t i = b; i < e; ++i) {
          const double d = g[i] + l2 * w[i];
          update_moments(ma[i], va[i], d, beta1, beta2);
          const double m_hat = ma[i] / bc1;
          const double scale =
              rectify ? rect * std::sqrt(bc2) / (std::sqrt(static_cast<double>(va[i])) + eps) : 1;
          w[i] = w[i] * decay - lr * m_hat * scale;
        }
      });
    }
  }
  return loss;
}

}  // namespace kiln::optim
