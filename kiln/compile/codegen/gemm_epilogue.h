#pragma once
// A matrix product's epilogue inside its tiles (ARCHITECTURE.md §7). When the fused kernel after
// a float32 product reads the product element for element (a bias, an activation, a residual
// add, a softmax or norm over its rows), the program runs the product on Kiln's register-blocked
// kernel panel by panel of C's rows and the fused kernel on each panel right after it, on the same
// thread, while the panel is in cache: no second pass over C from memory. Without max-autotune this
// happens where Kiln's kernel is the product's default path anyway (under 2^21 multiply-adds);
// under max-autotune the program times it against the tuned product followed by the kernel, once
// per product shape, kernel and process.
#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kiln/backend/cpu/blas.h"
#include "kiln/compile/codegen/cpp_codegen.h"
#include "kiln/compile/codegen/runtime.h"

namespace kiln::compiler {

// A product step whose following fused kernel can run inside it.
struct GemmEpilogue {
  int gemm_step = -1;    // an extern mm, bmm, addmm or baddbmm
  int kernel_step = -1;  // a fused kernel; the steps between are views of the product
  int kernel = -1;       // its index among the schedule's kernels
  int read = -1;         // the value it reads the product as: the product or a view of it
  int slot = -1;         // that value's place among the kernel's buffers
};

// How many products in this process ran with their epilogue kernel inside them (tests, logs).
int64_t gemm_epilogues_run_inside();

std::vector<GemmEpilogue> find_gemm_epilogues(const Graph& graph, const Schedule& schedule,
                                              const GeneratedUnit& unit);

// One product step run with its epilogue kernel. The kernel's buffers are ready but for the
// product's slot, which the product fills in.
class GemmEpilogueRun {
 public:
  // kernel_id: names the kernel's code (its library and symbol), for max-autotune's choices.
  GemmEpilogueRun(const GemmEpilogue& plan, KilnKernelFn kernel, std::string kernel_id,
                  std::vector<char*> buffers, std::vector<int64_t> params,
                  const KilnKernelRuntime* runtime, bool autotune);
  // Runs the step (which computes the product with cpu::gemm), the kernel inside the product when
  // it can.
  void run_product(const std::function<void()>& step);
  // Whether the kernel has run on the whole product, which it reads as `read`; if not, the caller
  // runs it as usual (it is a function of its loads, so running it again is harmless).
  bool done(const Tensor& read) const;

 private:
  static bool intercept(const cpu::GemmArgs& g);
  static void after_panel(void* self, int64_t row_begin, int64_t row_end);
  bool by_panels(const cpu::GemmArgs& g, char* c);
  bool inside(const cpu::GemmArgs& g);

  const GemmEpilogue& plan_;
  KilnKernelFn kernel_;
  std::string kernel_id_;
  std::vector<char*> buffers_;
  std::vector<int64_t> params_;
  const KilnKernelRuntime* runtime_;
  bool autotune_;
  cpu::GemmInterceptor previous_ = nullptr;
  std::optional<cpu::GemmImpl> tuned_;  // max-autotune's implementation for the product
  int calls_ = 0;
  bool ran_ = false;
  std::atomic<bool> failed_{false};
  const void* c_ = nullptr;
  int64_t rows_ = 0, n_ = 0;
};

}  // namespace kiln::compiler
