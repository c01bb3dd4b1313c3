#pragma once
// The CUDA kernels of the fused optimizer ops (_fused_adam_, _fused_adamw_, _fused_sgd_;
// kiln/optim/fused_adam.h, fused_sgd.h): multi-tensor applies (tensor_lists.h), one launch per
// 56 parameters of one dtype, computing as the CPU kernels do.
#include <string>

#include "kiln/core/dtype.h"

namespace kiln::cuda {

enum class FusedOptimizer { Adam, SGD };

// (TensorLists lists, int count, <the optimizer's scalars>): the entries' tensors are the
// parameter (T), its gradient (T) and its state (Acc: float, double for float64).
//   Adam: (Acc decay, Acc sign, Acc l2, Acc one_minus_beta1, Acc beta2, Acc one_minus_beta2,
//          Acc eps, int amsgrad); t = p, g, exp_avg, exp_avg_sq, max_exp_avg_sq;
//          s = step_size, 1 / sqrt(bias_correction2)
//   SGD:  (Acc lr, Acc sign, Acc weight_decay, Acc momentum, Acc one_minus_dampening,
//          int nesterov); t = p, g, momentum_buffer (null without momentum); s[0] = 1 on the
//          parameter's first step
std::string fused_optimizer_source(FusedOptimizer kind, ScalarType param_dtype,
                                   const std::string& name);

// Sets the CUDA kernels of _fused_adam_, _fused_adamw_ and _fused_sgd_.
void register_fused_optimizer_kernels();

}  // namespace kiln::cuda
