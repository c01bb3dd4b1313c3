#pragma once
// Fused softmax / log_softmax along one dim: one kernel per row (max, sum of exponentials,
// normalisation), computed in float for float32/bfloat16/float16 and in double for float64.
#include "kiln/core/tensor.h"

namespace kiln::cpu {

// out = softmax(x) (log_softmax when `log`) along `dim`. x and out are contiguous, with the
// same shape and the same floating dtype.
void softmax(const Tensor& out, const Tensor& x, int64_t dim, bool log);

}  // namespace kiln::cpu
