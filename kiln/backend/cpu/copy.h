#pragma once
// Copy with dtype conversion and broadcasting (src to dst's shape), and fill.
#include "kiln/core/tensor.h"

namespace kiln::cpu {
void copy(const Tensor& dst, const Tensor& src);
void fill(const Tensor& dst, const Scalar& value);
// A fresh contiguous tensor for a kernel's scratch: kernels run below dispatch, so they allocate
// storage directly rather than through the creation ops.
Tensor empty_buffer(const SymShape& sizes, ScalarType dtype, Device device);
}  // namespace kiln::cpu
