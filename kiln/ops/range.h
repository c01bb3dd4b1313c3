#pragma once
// Factories of evenly spaced values: arange, linspace, logspace, and the identity matrix eye.
#include "kiln/core/tensor.h"

namespace kiln {

// [start, end) in steps of `step` (start = 0, step = 1 when omitted); ceil((end - start) /
// step) values. Without a dtype: int64 when every bound is an integer, else the default dtype.
Tensor arange(const Scalar& end, const TensorOptions& options = {});
Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& options = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step,
              const TensorOptions& options = {});
// `steps` values from start to end inclusive, evenly spaced; the default dtype unless given.
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps,
                const TensorOptions& options = {});
// base ** linspace(start, end, steps).
Tensor logspace(const Scalar& start, const Scalar& end, int64_t steps, double base = 10.0,
                const TensorOptions& options = {});
// n x m (m = n when omitted) with ones on the diagonal.
Tensor eye(int64_t n, const TensorOptions& options = {});
Tensor eye(int64_t n, int64_t m, const TensorOptions& options = {});

}  // namespace kiln
