#pragma once
// SGD with momentum, dampening, Nesterov momentum, weight decay and maximize (PyTorch's rules).
#include "kiln/core/arg.h"
#include "kiln/optim/optimizer.h"

namespace kiln::optim {

struct SGDOptions : public OptimizerCloneableOptions<SGDOptions> {
  SGDOptions(double lr) : lr_(lr) {}  // NOLINT: SGDOptions(0.1)
  KILN_ARG(double, lr);
  KILN_ARG(double, momentum) = 0;
  KILN_ARG(double, dampening) = 0;
  KILN_ARG(double, weight_decay) = 0;
  KILN_ARG(bool, nesterov) = false;
  KILN_ARG(bool, maximize) = false;

 public:
  template <class F>
  void for_each_field(F&& f) {
    f("lr", lr_), f("momentum", momentum_), f("dampening", dampening_);
    f("weight_decay", weight_decay_), f("nesterov", nesterov_), f("maximize", maximize_);
  }
};

KILN_OPTIMIZER(SGD);

}  // namespace kiln::optim
