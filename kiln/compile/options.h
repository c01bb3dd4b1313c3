#pragma once
// kiln::CompileOptions: how kiln::compile captures and runs a function (docs/compile.md).
#include <optional>
#include <string>

namespace kiln {

class CompileOptions {
 public:
  // Unset (the default): automatic dynamic; the first call specialises every size, and a size
  // that changes between calls becomes symbolic at the recompile. true: every size (except 0
  // and 1) is symbolic from the start; false: every size is specialised.
  CompileOptions& dynamic(std::optional<bool> d) {
    dynamic_ = d;
    return *this;
  }
  // Strict: anything that would make the function run eagerly is an error instead.
  CompileOptions& fullgraph(bool f) {
    fullgraph_ = f;
    return *this;
  }
  // "codegen" (the default) fuses the captured graph into generated C++ kernels; "eager"
  // replays it op by op on the eager kernels (for debugging).
  CompileOptions& backend(std::string b) {
    backend_ = std::move(b);
    return *this;
  }
  // "default", or "max-autotune": each matrix product of the compiled code is timed with every
  // implementation that can run it, at its sizes, and runs with the fastest (the choice is
  // cached on disk; codegen/gemm_autotune.h).
  CompileOptions& mode(std::string m) {
    mode_ = std::move(m);
    return *this;
  }
  // Graphs kept per function before it runs eagerly (PyTorch's recompile_limit).
  CompileOptions& recompile_limit(int n) {
    recompile_limit_ = n;
    return *this;
  }
  // The function's name in logs and errors (default: "compiled function <n>").
  CompileOptions& name(std::string n) {
    name_ = std::move(n);
    return *this;
  }

  const std::optional<bool>& dynamic() const { return dynamic_; }
  bool fullgraph() const { return fullgraph_; }
  const std::string& backend() const { return backend_; }
  const std::string& mode() const { return mode_; }
  int recompile_limit() const { return recompile_limit_; }
  const std::string& name() const { return name_; }

 private:
  std::optional<bool> dynamic_;
  bool fullgraph_ = false;
  std::string backend_ = "codegen";
  std::string mode_ = "default";
  int recompile_limit_ = 8;
  std::string name_;
};

// Checks the backend and the mode: `where` ("compile: ... for f", "compiled_autograd") starts
// the error.
void check_backend_and_mode(const CompileOptions& options, const std::string& where);

}  // namespace kiln
