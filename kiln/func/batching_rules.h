#pragma once
// How vmap computes one op for a whole batch (ARCHITECTURE.md §4-§5). An op's own rule comes first
// (OpDef::batch_rule); then its family's: pointwise ops broadcast with the batch in front, and
// ops of one tensor whose schema names their dims (sum, softmax, transpose, view, ...) run with
// those dims shifted past the batch. Anything else runs as a loop over the batch.
#include <optional>

#include "kiln/ops/registry.h"

namespace kiln::func::detail {

enum class BatchRuleKind { Own, Pointwise, Dims, Loop };
BatchRuleKind batch_rule_kind(const OpDef& op);
const char* to_string(BatchRuleKind kind);

// The op's rule applied to `call`, or nullopt where it does not apply (the loop then runs).
std::optional<BatchResult> apply_batch_rule(const OpDef& op, const BatchCall& call);

// The loop every op can take: the op once per batch element, results stacked at dim 0.
// before_each runs before each element's call (a random op's generator reset, for "same").
BatchResult batch_loop(const OpDef& op, const BatchCall& call,
                       const std::function<void()>& before_each = {});

// The rank the op sees: value's rank less the batch dim.
int64_t logical_rank(const Tensor& value, std::optional<int64_t> bdim);

}  // namespace kiln::func::detail
