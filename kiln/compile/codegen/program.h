#pragma once
// The codegen backend's compiled graph: the schedule's fused kernels, generated, built and
// loaded, and its extern calls, run in order on each call.
#include <memory>
#include <span>
#include <vector>

#include "kiln/compile/codegen/cpp_codegen.h"
#include "kiln/compile/codegen/gemm_epilogue.h"
#include "kiln/compile/codegen/kernel_cache.h"
#include "kiln/compile/codegen/runtime.h"

namespace kiln::compiler {

class CodegenProgram {
 public:
  // Schedules, generates and builds the kernels of `graph` (which must outlive the program).
  // autotune (mode "max-autotune"): its matrix products run with the implementation timed
  // fastest for each (gemm_autotune.h).
  explicit CodegenProgram(const Graph& graph, bool autotune = false);
  // captured: this call's tensors in the places of graph.captured_tensors. Each value, inputs
  // included, is dropped after the last step that reads it, so a caller that moves its inputs
  // in (a compiled backward, its saved values) frees them as the program goes.
  std::vector<Tensor> run(std::vector<Tensor> inputs, const std::vector<Tensor>& captured,
                          std::span<const int64_t> symbols) const;

  const Schedule& schedule() const { return schedule_; }
  const std::string& source() const { return unit_.source; }
  const std::string& library_path() const { return library_->path(); }

 private:
  void run_kernel(int k, std::vector<Tensor>& values, std::span<const int64_t> symbols) const;
  // Allocates kernel k's stores and returns its buffers (`pending`, a value not computed yet, as
  // null) and size parameters.
  std::vector<char*> kernel_buffers(int k, std::vector<Tensor>& values,
                                    std::span<const int64_t> symbols, int pending = -1) const;
  std::vector<int64_t> kernel_params(int k, std::span<const int64_t> symbols) const;
  void run_steps(std::vector<Tensor>& values, std::span<const int64_t> symbols) const;

  const Graph& graph_;
  bool autotune_;
  Schedule schedule_;
  GeneratedUnit unit_;
  std::shared_ptr<SharedObject> library_;
  std::vector<KilnKernelFn> kernels_;
  std::vector<std::vector<int>> last_read_by_;  // per step: the values no later step reads
  std::vector<GemmEpilogue> epilogues_;         // products whose next kernel runs inside them
};

}  // namespace kiln::compiler
