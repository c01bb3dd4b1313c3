#pragma once
// Adagrad, RMSprop and Adamax: per-element adaptive learning rates from running gradient
// statistics (PyTorch's update rules).
#include <tuple>

#include "kiln/core/arg.h"
#include "kiln/optim/optimizer.h"

namespace kiln::optim {

struct AdagradOptions : public OptimizerCloneableOptions<AdagradOptions> {
  AdagradOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT
  KILN_ARG(double, lr);
  KILN_ARG(double, lr_decay) = 0;
  KILN_ARG(double, weight_decay) = 0;
  KILN_ARG(double, initial_accumulator_value) = 0;
  KILN_ARG(double, eps) = 1e-10;
  KILN_ARG(bool, maximize) = false;

 public:
  template <class F>
  void for_each_field(F&& f) {
    f("lr", lr_), f("lr_decay", lr_decay_), f("weight_decay", weight_decay_);
    f("initial_accumulator_value", initial_accumulator_value_), f("eps", eps_);
    f("maximize", maximize_);
  }
};
KILN_OPTIMIZER(Adagrad);

struct RMSpropOptions : public OptimizerCloneableOptions<RMSpropOptions> {
  RMSpropOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT
  KILN_ARG(double, lr);
  KILN_ARG(double, alpha) = 0.99;
  KILN_ARG(double, eps) = 1e-8;
  KILN_ARG(double, weight_decay) = 0;
  KILN_ARG(double, momentum) = 0;
  KILN_ARG(bool, centered) = false;
  KILN_ARG(bool, maximize) = false;

 public:
  template <class F>
  void for_each_field(F&& f) {
    f("lr", lr_), f("alpha", alpha_), f("eps", eps_), f("weight_decay", weight_decay_);
    f("momentum", momentum_), f("centered", centered_), f("maximize", maximize_);
  }
};
KILN_OPTIMIZER(RMSprop);

struct AdamaxOptions : public OptimizerCloneableOptions<AdamaxOptions> {
  using Betas = std::tuple<double, double>;
  AdamaxOptions(double lr = 2e-3) : lr_(lr) {}  // NOLINT
  KILN_ARG(double, lr);
  KILN_ARG(Betas, betas) = std::make_tuple(0.9, 0.999);
  KILN_ARG(double, eps) = 1e-8;
  KILN_ARG(double, weight_decay) = 0;
  KILN_ARG(bool, maximize) = false;

 public:
  template <class F>
  void for_each_field(F&& f) {
    f("lr", lr_), f("beta1", std::get<0>(betas_)), f("beta2", std::get<1>(betas_));
    f("eps", eps_), f("weight_decay", weight_decay_), f("maximize", maximize_);
  }
};
KILN_OPTIMIZER(Adamax);

}  // namespace kiln::optim
