#pragma once
// NAdam (Nesterov-accelerated Adam) and RAdam (rectified Adam), with PyTorch's update rules.
#include <tuple>

#include "kiln/core/arg.h"
#include "kiln/optim/optimizer.h"

namespace kiln::optim {

struct NAdamOptions : public OptimizerCloneableOptions<NAdamOptions> {
  using Betas = std::tuple<double, double>;
  NAdamOptions(double lr = 2e-3) : lr_(lr) {}  // NOLINT
  KILN_ARG(double, lr);
  KILN_ARG(Betas, betas) = std::make_tuple(0.9, 0.999);
  KILN_ARG(double, eps) = 1e-8;
  KILN_ARG(double, weight_decay) = 0;
  KILN_ARG(double, momentum_decay) = 4e-3;
  KILN_ARG(bool, decoupled_weight_decay) = false;

 public:
  template <class F>
  void for_each_field(F&& f) {
    f("lr", lr_), f("beta1", std::get<0>(betas_)), f("beta2", std::get<1>(betas_));
    f("eps", eps_), f("weight_decay", weight_decay_), f("momentum_decay", momentum_decay_);
    f("decoupled_weight_decay", decoupled_weight_decay_);
  }
};
KILN_OPTIMIZER(NAdam);

struct RAdamOptions : public OptimizerCloneableOptions<RAdamOptions> {
  using Betas = std::tuple<double, double>;
  RAdamOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT
  KILN_ARG(double, lr);
  KILN_ARG(Betas, betas) = std::make_tuple(0.9, 0.999);
  KILN_ARG(double, eps) = 1e-8;
  KILN_ARG(double, weight_decay) = 0;
  KILN_ARG(bool, decoupled_weight_decay) = false;

 public:
  template <class F>
  void for_each_field(F&& f) {
    f("lr", lr_), f("beta1", std::get<0>(betas_)), f("beta2", std::get<1>(betas_));
    f("eps", eps_), f("weight_decay", weight_decay_);
    f("decoupled_weight_decay", decoupled_weight_decay_);
  }
};
KILN_OPTIMIZER(RAdam);

}  // namespace kiln::optim
