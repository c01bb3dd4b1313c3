#pragma once
// Adam and AdamW (decoupled weight decay), with amsgrad and maximize (PyTorch's rules).
#include <tuple>

#include "kiln/core/arg.h"
#include "kiln/optim/optimizer.h"

namespace kiln::optim {

// The fields Adam and AdamW share; they differ in weight decay's default and how it applies.
// (A macro rather than a base class so each options type's setters return that type.)
#define KILN_ADAM_OPTIONS(Name, default_weight_decay)                                 \
  struct Name : public OptimizerCloneableOptions<Name> {                              \
    using Betas = std::tuple<double, double>;                                         \
    Name(double lr = 1e-3) : lr_(lr) {} /* NOLINT: Name(1e-3) */                      \
    KILN_ARG(double, lr);                                                             \
    KILN_ARG(Betas, betas) = std::make_tuple(0.9, 0.999);                             \
    KILN_ARG(double, eps) = 1e-8;                                                     \
    KILN_ARG(double, weight_decay) = default_weight_decay;                            \
    KILN_ARG(bool, amsgrad) = false;                                                  \
    KILN_ARG(bool, maximize) = false;                                                 \
                                                                                      \
   public:                                                                            \
    template <class F>                                                                \
    void for_each_field(F&& f) {                                                      \
      f("lr", lr_), f("beta1", std::get<0>(betas_)), f("beta2", std::get<1>(betas_)); \
      f("eps", eps_), f("weight_decay", weight_decay_), f("amsgrad", amsgrad_);       \
      f("maximize", maximize_);                                                       \
    }                                                                                 \
  }

KILN_ADAM_OPTIONS(AdamOptions, 0.0);
KILN_ADAM_OPTIONS(AdamWOptions, 1e-2);
#undef KILN_ADAM_OPTIONS

KILN_OPTIMIZER(Adam);
KILN_OPTIMIZER(AdamW);

}  // namespace kiln::optim
