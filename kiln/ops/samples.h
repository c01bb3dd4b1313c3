#pragma once
// Sample inputs for the op-table tests. Data comes from a fixed-seed engine that is independent
// of Kiln's own random ops, so a bug there cannot hide a bug elsewhere.
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln::samples {

// A tensor with values uniform in [low, high). noncontiguous: the same values laid out with a
// gap between rows (a strided view of a larger buffer).
Tensor make(std::vector<int64_t> shape, ScalarType dtype, double low = -3, double high = 3,
            bool noncontiguous = false);

// Unary: 0-dim, vector, matrix, non-contiguous (transposed), zero-size.
std::vector<OpSample> unary(ScalarType dtype, double low = -3, double high = 3);
// Binary: same shape, broadcasting, 0-dim and wrapped-scalar operands, non-contiguous, empty.
std::vector<OpSample> binary(ScalarType dtype, double low = -3, double high = 3,
                             double low2 = -3, double high2 = 3);

}  // namespace kiln::samples
