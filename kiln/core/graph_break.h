#pragma once
// GraphBreak: what stops kiln::compile's capture of a function (kiln/compile/tracer.h). Core
// code that meets a traced tensor it cannot record (backward() on one) throws it too.
#include "kiln/core/error.h"

namespace kiln::compiler {

// Why a capture stopped: the function does something a graph cannot hold (reads a value, draws
// random numbers, makes a size that depends on values). The function then runs eagerly.
class GraphBreak : public Error {
 public:
  using Error::Error;
};

// Whether a capture is running on this thread. Code whose C++ state a graph would bake in as
// constants (an optimizer's step count and learning rate) checks it and throws GraphBreak before
// it changes that state.
bool is_capturing();

// Marks this thread as capturing while alive (the tracer holds one around the function).
class CapturingScope {
 public:
  CapturingScope();
  ~CapturingScope();
  CapturingScope(const CapturingScope&) = delete;
  CapturingScope& operator=(const CapturingScope&) = delete;
};

}  // namespace kiln::compiler
