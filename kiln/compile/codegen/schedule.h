#pragma once
// The scheduler of the codegen backend (ARCHITECTURE.md §7): groups a graph's pointwise ops into
// fused kernels, one loop nest each over one iteration shape, and leaves every other op as an
// extern call into its eager kernel. Values read or written by a kernel are buffers with
// symbolic strides (views and broadcasts are index expressions, not copies); values that live
// only inside one kernel are never stored.
#include <optional>
#include <string>
#include <vector>

#include "kiln/compile/graph.h"
#include "kiln/ops/lowering.h"

namespace kiln::compiler {

// A reduction over the trailing dims of a kernel's shape, computed row by row: sum, mean, amax
// and amin give one value per row; softmax, log_softmax, layer_norm and rms_norm are decomposed
// into per-row statistics (max and sum of exponentials; mean and variance; mean square) and a
// full-shaped result. The pointwise ops before it in its kernel (its producers) are computed in
// each pass over a row; those after it (its consumers) in the last pass.
struct RowReduction {
  enum class Kind { Sum, Mean, Max, Min, Softmax, LogSoftmax, LayerNorm, RmsNorm };
  Kind kind = Kind::Sum;
  // Sum, Mean, Max, Min: one statistic per row, folded in one pass (no full-shaped result).
  bool is_fold() const {
    return kind == Kind::Sum || kind == Kind::Mean || kind == Kind::Max || kind == Kind::Min;
  }
  int node = -1;         // the graph node
  int reduced_dims = 0;  // trailing dims of the kernel's shape it reduces
  // Sum, Mean, Max, Min over dims [kept_outer_dims, kept_outer_dims + reduced_dims) instead,
  // with kept dims after them (the kernel's columns; one element of the result per column and
  // index of the kept outer dims, each computed by one thread in row order).
  bool columns = false;
  int kept_outer_dims = 0;
  // The order the kernel loops over the dims of its shape when the reduced dims are not
  // consecutive (empty: as they are): the kept dims before the last reduced one, the reduced
  // dims, then the kept dims after it, so that the reduced dims are rows or columns in that
  // order. Kept dims keep their relative order, so the results stay dense in loop order.
  std::vector<int> order;
  double eps = 0;                // layer_norm, rms_norm
  int full_output = -1;          // the value with the kernel's shape it computes (softmax, norms)
  std::vector<int> row_outputs;  // values with one element per row (sum; mean, rstd)

  // nll_loss of a log_softmax's rows (cross_entropy), gathered in the row kernel: each row's
  // loss and weight, -w[t] * logp[t] and w[t] for its target t, go to per-row scratch, and the
  // program reduces them to nll_loss's outputs after the kernel. The log-probabilities are not
  // stored unless something else reads them.
  struct Nll {
    int node = -1;
    int target = -1;  // int64/int32 [rows], contiguous
    int weight = -1;  // [classes] or none
    int64_t ignore_index = -100;
    int64_t reduction = 1;  // nll_loss's attribute: none 0, mean 1, sum 2
  };
  std::optional<Nll> nll;
};

struct FusedKernel {
  std::vector<int> nodes;                // graph nodes, in graph order
  std::vector<lowering::ExprPtr> exprs;  // each node's expression (null: the row reduction)
  SymShape sizes;                        // the iteration shape (pointwise nodes' output shape)
  std::vector<int> loads;                // values read from memory
  std::vector<int> stores;               // values written (read elsewhere, or graph outputs)
  std::optional<RowReduction> row;       // at most one per kernel
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
