#pragma once
// Graph passes that keep the graph's meaning (ARCHITECTURE.md §7): common subexpressions are
// computed once, and ops whose results nothing reads are dropped.
#include "kiln/compile/graph.h"

namespace kiln::compiler {

struct PassStats {
  int merged = 0;   // nodes replaced by an identical earlier node
  int removed = 0;  // nodes whose outputs were never read
};

// Merges nodes with the same op, inputs and attributes (not in graphs with in-place ops before
// other ops).
int eliminate_common_subexpressions(Graph& graph);
// Drops nodes none of whose outputs reach a graph output or an in-place op.
int eliminate_dead_code(Graph& graph);
PassStats simplify(Graph& graph);

}  // namespace kiln::compiler
