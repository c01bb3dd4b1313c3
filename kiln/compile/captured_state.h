#pragma once
// A compiled function's capture of state kept in C++ fields: the .grad fields the function reads
// (graph inputs read again at each call, guarded on being defined), the ones it sets (replayed
// after each call: a graph output or "none"), backward() inside the function, traced as ops, and
// optimizer steps, run after each call.
#include <functional>
#include <unordered_map>
#include <vector>

#include "kiln/core/graph_break.h"
#include "kiln/core/tensor.h"

namespace kiln::compiler {

class Tracer;
struct Graph;

// What a graph does with .grad, found once its capture has finished.
struct StateEffects {
  struct Entry {
    Tensor leaf;
    Tensor grad;  // at the call's start; undefined when there was none
  };
  // The .grad the function read before setting it: a later call must agree on which are
  // defined, and the graph reads the defined ones as captured tensors (gradient_inputs).
  std::vector<Entry> read;
  struct Write {
    Tensor leaf;
    Tensor grad;  // its final value: a traced tensor, or undefined for "none"
  };
  std::vector<Write> written;
  bool ran_backward = false;
  // What runs after each call, once the .grad are set (optimizer steps), in order.
  std::vector<std::function<void()>> deferred;
};

class CapturedState final : public CaptureContext {
 public:
  explicit CapturedState(Tracer& tracer) : tracer_(tracer) {}
  // Puts back every .grad the capture changed.
  ~CapturedState() override;
  CapturedState(const CapturedState&) = delete;
  CapturedState& operator=(const CapturedState&) = delete;

  void reading_grad(const Tensor& t) override;
  void writing_grad(const Tensor& t) override;
  std::vector<Tensor> backward(const std::vector<Tensor>& roots,
                               const std::vector<Tensor>& grad_roots,
                               const std::vector<Tensor>* inputs, bool keep_graph,
                               bool create_graph, bool allow_unused) override;
  void defer(const char* what, std::function<void()> effect) override;

  // Ends the capture of .grad: what the graph must replay, with every .grad put back. Throws
  // GraphBreak where a graph cannot replay it (a .grad set to a tensor the function did not
  // compute).
  StateEffects finish();

 private:
  struct Slot {
    Tensor leaf;
    Tensor original;
    bool read_first = false;  // read before the function set it
    bool written = false;
  };
  Slot& slot(const Tensor& t);
  void restore();
  // Adds g to t.grad as AccumulateGrad would.
  void accumulate(const Tensor& leaf, const Tensor& g);

  Tracer& tracer_;
  std::vector<Slot> slots_;
  std::unordered_map<const TensorImpl*, size_t> index_;
  bool ran_backward_ = false;
  std::vector<std::function<void()>> deferred_;
  std::vector<char> freed_;  // by node: a backward() without retain_graph ran through it
};

}  // namespace kiln::compiler
