#pragma once
// What a training graph's forward saves for its backward, chosen by a minimum cut over bytes as
// PyTorch's min_cut_rematerialization_partition does: every forward value the backward reads is
// either saved or recomputed in the backward from saved values, and the saved bytes are the
// fewest possible. Only cheap ops are recomputed: pointwise ops, views, and reductions that do
// not shrink their input (softmax). Unlike PyTorch's default, a value is recomputed even when
// the backward must store it again for a GEMM (the gelu output a weight gradient reads): on the
// demo GPT's block that keeps 30% fewer bytes than eager autograd for ~2% more step time, where
// PyTorch's rule kept as many as eager (docs/compile.md, "Training graphs").
#include <vector>

#include "kiln/compile/graph.h"

namespace kiln::compiler {

struct SavePlan {
  std::vector<int> saved;       // joint graph values the forward returns, in value order
  std::vector<char> recompute;  // per joint graph node: a forward node the backward runs again
};

// `backward_value` marks the joint graph's values that depend on a gradient; `needed` lists the
// other (forward) values the backward reads or returns. A GraphBreak when the backward would read
// an argument or captured tensor the forward changes in place (it runs after the change).
SavePlan plan_saved_values(const Graph& joint, const std::vector<char>& backward_value,
                           const std::vector<int>& needed);

// The value whose storage a value is: itself, or a view's base.
int storage_root(const Graph& graph, int value);
// The bytes a value keeps alive: its storage's (a view's base's) at the symbols' hints.
int64_t storage_bytes(const Graph& graph, int value);

}  // namespace kiln::compiler
