#pragma once
// Capture: runs a function under a dispatch mode that records every op call into a Graph while
// the tensors are meta tensors with (possibly symbolic) sizes (ARCHITECTURE.md §7).
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/compile/graph.h"
#include "kiln/core/dispatch.h"
#include "kiln/core/error.h"

namespace kiln::compiler {

// Why a capture stopped: the function does something a graph cannot hold (reads a value, draws
// random numbers, makes a size that depends on values). The function then runs eagerly.
class GraphBreak : public Error {
 public:
  using Error::Error;
};

class Tracer {
 public:
  explicit Tracer(ShapeEnv& env);
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // The stand-in for the next graph input: a traced meta tensor with these sizes and strides.
  Tensor add_input(SymShape sizes, SymShape strides, ScalarType dtype, Device device);
  // Runs f() with the tracing mode on top of the mode stack.
  template <class F>
  auto run(F&& f) {
    ModeGuard guard(mode_);
    return f();
  }
  // The graph, with these tensors (results of the function) as its outputs.
  Graph finish(const std::vector<Tensor>& outputs);

 private:
  class Mode;
  int value_of(const Tensor& t);
  void note_storage(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outs);
  const OpDef& functional_form(const OpDef& op, const std::vector<Tensor>& inputs,
                               const Attrs& attrs, const std::vector<Tensor>& outs);

  ShapeEnv& env_;
  Graph graph_;
  std::unordered_map<const TensorImpl*, int> ids_;
  std::vector<Tensor> seen_;  // keeps every traced impl alive, so no address in ids_ is reused
  // Storage of tensors the function computed (not views, not inputs), and storage that more
  // than one tensor reads (a view's and its base's).
  std::unordered_set<const StorageImpl*> fresh_, aliased_;
  std::shared_ptr<DispatchMode> mode_;
};

}  // namespace kiln::compiler
