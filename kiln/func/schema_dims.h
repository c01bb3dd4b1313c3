#pragma once
// The "dims" batching family: an op of one tensor whose schema names its dim and size arguments
// (sum(Tensor self, int[] dim, ...), transpose, softmax, view(Tensor self, SymInt[] size), ...)
// runs once on the physical tensor, batch in front, with those arguments moved past the batch.
#include <optional>

#include "kiln/ops/registry.h"

namespace kiln::func::detail {

bool dims_rule_applies(const OpDef& op);
// Nullopt where this call's arguments cannot be moved (a dim of None meaning "flatten").
std::optional<BatchResult> dims_rule(const OpDef& op, const BatchCall& call);

}  // namespace kiln::func::detail
