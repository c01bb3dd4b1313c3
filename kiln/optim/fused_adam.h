#pragma once
// One Adam or AdamW step for a list of parameters in a single op, as PyTorch's
// torch._fused_adam_ / torch._fused_adamw_: the registry ops `_fused_adam_` and `_fused_adamw_`
// write the parameters and their state in place. On the CPU the update is one parallel pass per
// parameter; a device backend may give one launch for the whole list (the CUDA backend does).
// optim::Adam and optim::AdamW call them.
#include <cstdint>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln {

// The hyperparameters of a step. steps[i] is parameter i's step number counting this one (1 on
// the first step); PyTorch passes it as a tensor, Kiln keeps it on the host. Without amsgrad,
// max_exp_avg_sqs is empty.
struct FusedAdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, weight_decay = 0, eps = 1e-8;
  bool amsgrad = false, maximize = false;
};

// Adam: weight decay adds weight_decay * param to the gradient (L2).
void _fused_adam_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                  const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                  const std::vector<Tensor>& max_exp_avg_sqs, const std::vector<int64_t>& steps,
                  const FusedAdamOptions& options);
// AdamW: weight decay scales the parameter by 1 - lr * weight_decay (decoupled).
void _fused_adamw_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                   const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                   const std::vector<Tensor>& max_exp_avg_sqs, const std::vector<int64_t>& steps,
                   const FusedAdamOptions& options);

}  // namespace kiln
