#pragma once
// GraphBreak: what stops kiln::compile's capture of a function (kiln/compile/tracer.h). Core
// code that meets a traced tensor it cannot record throws it too.
#include <functional>
#include <vector>

#include "kiln/core/error.h"

namespace kiln {
class Tensor;
}

namespace kiln::compiler {

// Why a capture stopped: the function does something a graph cannot hold (reads a value, draws
// random numbers, makes a size that depends on values). The function then runs eagerly.
class GraphBreak : public Error {
 public:
  using Error::Error;
};

// What core code tells the capture of a compiled function about state that lives in C++ fields
// rather than in ops: a graph must read again at each call the .grad it read, replay the .grad
// it set, record backward() as ops, and run an optimizer's step() after each call
// (kiln/compile/captured_state.h).
class CaptureContext {
 public:
  virtual ~CaptureContext() = default;
  // t.grad() is read; t.grad() is about to be set.
  virtual void reading_grad(const Tensor& t) = 0;
  virtual void writing_grad(const Tensor& t) = 0;
  // autograd::backward (inputs null) or autograd::grad on traced roots.
  virtual std::vector<Tensor> backward(const std::vector<Tensor>& roots,
                                       const std::vector<Tensor>& grad_roots,
                                       const std::vector<Tensor>* inputs, bool keep_graph,
                                       bool create_graph, bool allow_unused) = 0;
  // Runs `effect` after each call of the graph instead of now (an optimizer's step(): C++ state
  // a graph cannot replay). The function must not read what it changes afterwards.
  virtual void defer(const char* what, std::function<void()> effect) = 0;
};

// Whether a capture is running on this thread. Code whose C++ state a graph would bake in as
// constants (an optimizer's step count and learning rate) checks it and throws GraphBreak before
// it changes that state.
bool is_capturing();
// The innermost running capture's context on this thread; null when it has none.
CaptureContext* capture_context();

// Marks this thread as capturing while alive (the tracer holds one around the function).
class CapturingScope {
 public:
  explicit CapturingScope(CaptureContext* context = nullptr);
  ~CapturingScope();
  CapturingScope(const CapturingScope&) = delete;
  CapturingScope& operator=(const CapturingScope&) = delete;

 private:
  CaptureContext* outer_;
};

}  // namespace kiln::compiler
