#pragma once
// Copy with dtype conversion and broadcasting (src to dst's shape), and fill.
#include "kiln/core/tensor.h"

namespace kiln::cpu {
void copy(const Tensor& dst, const Tensor& src);
void fill(const Tensor& dst, const Scalar& value);
}  // namespace kiln::cpu
