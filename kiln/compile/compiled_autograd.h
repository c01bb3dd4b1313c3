#pragma once
// Compiled autograd, as PyTorch's torch._dynamo.compiled_autograd: while a guard is alive on a
// thread, backward() there captures the whole backward pass when it runs (every node's formula,
// tensor hooks, retain_grad and the accumulation into the leaves' .grad) as one graph, compiles
// it, and caches it by the autograd graph's structure, so the next step's backward, with the same
// structure, sizes and dtypes, runs the compiled program at once (docs/compile.md).
#include <memory>

#include "kiln/autograd/engine.h"
#include "kiln/compile/options.h"

namespace kiln::compiler {

struct CompiledAutogradStats {
  int compilations = 0;  // backward passes captured and compiled
  int cache_hits = 0;    // passes that ran one compiled before
  int eager_passes = 0;  // passes left to the eager engine (the reason is logged under "perf")
};

class CompiledAutograd {
 public:
  // options: backend ("codegen" or "eager") and fullgraph (a pass that cannot be captured is an
  // error instead of running on the eager engine).
  explicit CompiledAutograd(CompileOptions options = {});
  ~CompiledAutograd();
  CompiledAutograd(const CompiledAutograd&) = delete;
  CompiledAutograd& operator=(const CompiledAutograd&) = delete;

  CompiledAutogradStats stats() const;

  struct Cache;

 private:
  std::shared_ptr<Cache> cache_;
  autograd::BackwardInterceptor previous_;
};

// Spelled as PyTorch's context manager: `kiln::compiler::compiled_autograd guard;`.
using compiled_autograd = CompiledAutograd;

}  // namespace kiln::compiler
