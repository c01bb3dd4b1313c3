#pragma once
// The graph a score_mod or mask_mod is being traced into, on this thread (expr.cpp).
#include <vector>

#include "kiln/ops/nn/flex/expr.h"

namespace kiln::flex {

class TraceScope {
 public:
  TraceScope(Graph& graph, std::vector<Tensor>& captured, const char* op);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

  // The innermost scope; an Expr used outside any is an error.
  static TraceScope& current();
  // t's index among the captured tensors, added on its first use.
  int32_t capture(const Tensor& t);

  Graph* graph;
  std::vector<Tensor>* captured;
  const char* op;

 private:
  TraceScope* previous_;
};

}  // namespace kiln::flex
