#pragma once
// Capture: runs a function under a dispatch mode that records every op call into a Graph while
// the tensors are meta tensors with (possibly symbolic) sizes (ARCHITECTURE.md §7).
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/compile/graph.h"
#include "kiln/core/dispatch.h"
#include "kiln/core/error.h"
#include "kiln/core/graph_break.h"

namespace kiln::compiler {

class Tracer {
 public:
  explicit Tracer(ShapeEnv& env);
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // The stand-in for the next graph input: a traced meta tensor with these sizes and strides.
  Tensor add_input(SymShape sizes, SymShape strides, ScalarType dtype, Device device);
  // Runs f() with the tracing mode on top of the mode stack; `context` (captured_state.h)
  // follows what f does with autograd state.
  template <class F>
  auto run(F&& f, CaptureContext* context = nullptr) {
    const CapturingScope capturing(context);
    const Active active(this);
    ModeGuard guard(mode_);
    return f();
  }
  // The tracer whose run() is on this thread's stack, innermost first; null outside captures.
  static Tracer* active() { return active_; }
  ShapeEnv& shape_env() { return env_; }
  // Whether kiln::cond and kiln::while_loop on traced values become graph nodes (export) rather
  // than graph breaks (compile).
  void allow_control_flow(bool on) { control_flow_ = on; }
  bool control_flow_allowed() const { return control_flow_; }
  // Keeps a branch or loop body of a control-flow node; returns its index in graph().subgraphs.
  int add_subgraph(Graph g);
  // The graph, with these tensors (results of the function) as its outputs.
  Graph finish(const std::vector<Tensor>& outputs);

  // The graph so far, and the traced tensor of each of its values: what the backward trace of a
  // training graph walks (joint.cpp).
  const Graph& graph() const { return graph_; }
  // Every traced tensor the capture made, weakly: one still alive after the capture is over was
  // kept by the function past the call.
  std::vector<std::weak_ptr<TensorImpl>> traced_tensors() const;
  // A traced tensor that reads value `id` (a stand-in where the function's tensor has been
  // changed in place since, and reads a newer value).
  Tensor tensor(int id);
  int id_of(const Tensor& t) { return value_of(t); }
  // From now on, an op that reads a captured tensor (or a view of one) breaks the graph: `what`
  // (an optimizer's step) runs after the graph and changes them. An empty `what` lifts it.
  void seal(std::string what) { sealed_by_ = std::move(what); }

 private:
  class Mode;
  struct Active {
    explicit Active(Tracer* t) : outer(active_) { active_ = t; }
    ~Active() { active_ = outer; }
    Tracer* outer;
  };
  static thread_local Tracer* active_;
  bool control_flow_ = false;
  int value_of(const Tensor& t);
  void check_not_sealed(const OpDef& op, const std::vector<Tensor>& inputs);
  // Records a call of `op` as a node and returns its traced outputs.
  std::vector<Tensor> record(const OpDef& op, const std::vector<Tensor>& inputs,
                             const Attrs& attrs);

  // Functionalization (functionalization.cpp).
  void follow_argument(const Tensor& t, int id);
  void follow_captured(const Tensor& t, int id);
  void write_back_inputs();
  void note_storage(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outs);
  void refresh(const Tensor& t);
  std::optional<std::vector<Tensor>> functionalize(const OpDef& op,
                                                   const std::vector<Tensor>& inputs,
                                                   const Attrs& attrs);
  Tensor record_content(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs);

  ShapeEnv& env_;
  Graph graph_;
  std::unordered_map<const TensorImpl*, int> ids_;
  std::vector<Tensor> seen_;  // keeps every traced impl alive, so no address in ids_ is reused
  std::unordered_map<int, Tensor> traced_;     // inputs' and node outputs' traced tensors, by id
  std::unordered_map<int, Tensor> stand_ins_;  // tensor(id) of values a change has left behind
  // A storage the function computed or was given: the tensor that made it, the argument or the
  // captured tensor (dense from offset 0, its value the storage's current content) and how many
  // in-place changes it has had. A view of it whose version is behind is recomputed from the
  // base before it is read.
  struct Computed {
    Tensor base;
    uint64_t version = 0;
    bool viewed = false;  // another tensor shares it
    int input = -1;       // the argument's or captured tensor's value: it gets the final content
  };
  std::unordered_map<const StorageImpl*, Computed> storages_;
  std::vector<const StorageImpl*> inputs_;  // followed arguments' and captured tensors' storage
  std::unordered_map<const TensorImpl*, uint64_t> view_versions_;
  std::shared_ptr<DispatchMode> mode_;
  std::string sealed_by_;
};

}  // namespace kiln::compiler
