#pragma once
// Interval arithmetic over a traced graph: the range of its result over a block of positions
// (b and h fixed, q_idx and kv_idx in ranges), which decides most blocks of a block mask without
// evaluating the mask at each position.
#include <cstdint>
#include <vector>

#include "kiln/ops/nn/flex/expr_eval.h"

namespace kiln::flex {

struct Interval {
  double lo, hi;
};

// Loads with a box of indices read the captured table over it (up to 4096 elements; beyond that
// they are unbounded).
Interval bounds(const Graph& g, const std::vector<Table<double>>& tables, int64_t b, int64_t h,
                int64_t q_first, int64_t q_last, int64_t kv_first, int64_t kv_last);

}  // namespace kiln::flex
