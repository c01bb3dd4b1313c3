#pragma once
// The scheduler of the codegen backend (ARCHITECTURE.md §7): groups a graph's pointwise ops into
// fused kernels, one loop nest each over one iteration shape, and leaves every other op as an
// extern call into its eager kernel. Values read or written by a kernel are buffers with
// symbolic strides (views and broadcasts are index expressions, not copies); values that live
// only inside one kernel are never stored.
#include <string>
#include <vector>

#include "kiln/compile/graph.h"
#include "kiln/ops/lowering.h"

namespace kiln::compiler {

struct FusedKernel {
  std::vector<int> nodes;                // graph nodes, in graph order
  std::vector<lowering::ExprPtr> exprs;  // each node's expression (over its op's inputs)
  SymShape sizes;                        // the iteration shape (every node's output shape)
  std::vector<int> loads;                // values read from memory
  std::vector<int> stores;               // values written (read elsewhere, or graph outputs)
};

struct Step {
  bool is_kernel = false;
  int index = -1;  // the node (extern call) or the kernel
};

struct Schedule {
  std::vector<Step> steps;  // in execution order
  std::vector<FusedKernel> kernels;
  std::vector<std::string> extern_reasons;  // per extern node, why it was not fused (for logs)
  int loops() const { return static_cast<int>(kernels.size()); }
  std::string str(const Graph& graph) const;
};

Schedule schedule(const Graph& graph);

// The strides of value `v` over iteration shape `sizes` (rank of `sizes`; 0 where v broadcasts),
// or false when v does not broadcast to `sizes` provably (without a guard).
bool strides_over(const Value& v, const SymShape& sizes, SymShape& strides);

}  // namespace kiln::compiler
