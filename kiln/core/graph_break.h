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

}  // namespace kiln::compiler
