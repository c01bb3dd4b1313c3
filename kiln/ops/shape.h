#pragma once
// Views and shape ops: view, reshape, expand, slice, transpose, permute, cat, stack, ...
#include <optional>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln {

Tensor view(const Tensor& self, SymIntList size);
Tensor reshape(const Tensor& self, SymIntList size);
Tensor expand(const Tensor& self, SymIntList size);
Tensor slice(const Tensor& self, int64_t dim, std::optional<SymInt> start,
             std::optional<SymInt> end, SymInt step = 1);
Tensor narrow(const Tensor& self, int64_t dim, SymInt start, SymInt length);
Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1);
Tensor permute(const Tensor& self, IntArrayRef dims);
// Sums `self` down to `size` (the reverse of broadcasting), as torch's sum_to_size.
Tensor sum_to_size(const Tensor& self, SymIntList size);

// The strides a view of `sizes` would have over a tensor with (old_sizes, old_strides), or
// nullopt when no such view exists (PyTorch's computeStride).
std::optional<SymShape> view_strides(const SymShape& old_sizes, const SymShape& old_strides,
                                     const SymShape& sizes);
// Replaces one -1 in `size` by what makes the element count equal `numel`.
SymShape infer_size(const char* op, const SymShape& size, const SymInt& numel);

}  // namespace kiln
