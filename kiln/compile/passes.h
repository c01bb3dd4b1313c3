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

// A write through a view into an argument or a captured tensor is traced as
// as_strided_scatter(value, src), and the final value copied back at the end: the whole tensor,
// twice, where eager writes only the view (a cache written one position per call). Where the
// values from an input to its copy back are all such scatters, each becomes the write eager
// does, copy_(as_strided(input), src), and the copy back goes. Graph order is program order, and
// the tracer reads only a changed tensor's newest value, so each value of the chain is read only
// while it is the input's content: its readers read the input instead. The views' offsets count
// from the start of the input's storage, which the input must then be
// (Graph::written_in_place). Not for training graphs, whose backward reads inputs after the
// whole forward. Returns the number of inputs rewritten.
int reinplace_input_writes(Graph& graph);

}  // namespace kiln::compiler
