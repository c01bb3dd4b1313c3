#pragma once
// vmap's rules for the convolution entries (kiln/func): the batch joins the samples' dim N where
// the weight is shared, and the groups where each batch element has its own weight gradient.
#include <optional>

#include "kiln/ops/registry.h"

namespace kiln::conv {

// An input batched and a weight and bias that are not: one convolution of B*N samples.
std::optional<BatchResult> convolution_batch_rule(const BatchCall& call);
// Per-element weight gradients: the B elements become B times the groups.
std::optional<BatchResult> backward_weight_batch_rule(const BatchCall& call);

}  // namespace kiln::conv
