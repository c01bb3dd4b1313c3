#pragma once
// One SGD step for a list of parameters in a single op, as PyTorch's torch._fused_sgd_: the
// registry op `_fused_sgd_` writes the parameters and their momentum buffers in place. On the CPU
// the update is one parallel pass per parameter; the CUDA backend updates the list in one launch
// per 56 parameters. optim::SGD calls it.
#include <cstdint>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln {

struct FusedSGDOptions {
  double lr = 1e-3, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false, maximize = false;
};

// steps[i] is parameter i's step number counting this one: on step 1 the momentum buffer takes
// the gradient as it is. Without momentum, momentum_buffers is empty.
void _fused_sgd_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                 const std::vector<Tensor>& momentum_buffers, const std::vector<int64_t>& steps,
                 const FusedSGDOptions& options);

}  // namespace kiln
