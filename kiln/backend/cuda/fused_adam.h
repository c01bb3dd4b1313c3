#pragma once
// The CUDA kernel of _fused_adam_ and _fused_adamw_ (kiln/optim/fused_adam.h): one launch updates
// up to kFusedAdamTensors parameters with their state, as PyTorch's multi-tensor apply. The
// tensors' addresses, sizes and bias corrections travel in a table passed by value as a kernel
// argument (under the 4 KiB every CUDA version accepts), so a CUDA graph captures them.
#include <string>

#include "kiln/core/dtype.h"

namespace kiln::cuda {

constexpr int kFusedAdamTensors = 60;

// (FusedAdamTable table, int count, Acc decay, Acc sign, Acc l2, Acc one_minus_beta1,
//  Acc beta2, Acc one_minus_beta2, Acc eps, int amsgrad): blockIdx.y picks the table's entry.
// T is the parameters' (and gradients') storage type, Acc float (double for float64), the
// state's dtype.
std::string fused_adam_source(ScalarType param_dtype, const std::string& name);

// Sets the CUDA kernels of _fused_adam_ and _fused_adamw_.
void register_fused_adam_kernels();

}  // namespace kiln::cuda
