#pragma once
// Reductions over any set of dims: sum, mean, prod, amax, amin, max/min, var, std, norm, ...
#include <optional>

#include "kiln/core/tensor.h"

namespace kiln {

Tensor sum(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt);
Tensor sum(const Tensor& self, IntArrayRef dim, bool keepdim = false,
           std::optional<ScalarType> dtype = std::nullopt);

}  // namespace kiln
