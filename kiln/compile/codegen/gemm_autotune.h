#pragma once
// max-autotune's GEMM choices, as PyTorch's inductor makes them on the CPU: each matrix product a
// compiled program runs is timed once with every implementation that can run it (cpu::GemmImpl:
// OpenBLAS, oneDNN, Kiln's register-blocked kernel, converted float32 for 16-bit floats) at its
// real sizes and layout, and runs with the fastest from then on. Choices are kept in memory and
// in $KILN_CACHE_DIR/autotune (per CPU and thread count), so another process reuses them.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "kiln/backend/cpu/blas.h"

namespace kiln::compiler {

// While alive, cpu::gemm on this thread runs each product with its tuned implementation, tuning
// the ones it has not met.
class GemmAutotuneScope {
 public:
  GemmAutotuneScope();
  ~GemmAutotuneScope();
  GemmAutotuneScope(const GemmAutotuneScope&) = delete;
  GemmAutotuneScope& operator=(const GemmAutotuneScope&) = delete;

 private:
  cpu::GemmInterceptor previous_;
};

// The implementation a GemmAutotuneScope runs `args` with, timing the candidates first where it
// has no choice for it; counted in the stats as one product. nullopt where there is one path only.
std::optional<cpu::GemmImpl> tuned_gemm_impl(const cpu::GemmArgs& args);

// What a choice for `args` depends on: dtype, sizes, the operands' layouts, the thread count.
std::string gemm_autotune_key(const cpu::GemmArgs& args);
// The fastest of three timed runs of f, after one that warms caches and thread pools up;
// infinity when f returns false (it cannot run).
double best_time_of(const std::function<bool()>& f);

struct GemmAutotuneStats {
  int64_t tuned = 0;        // products timed in this process
  int64_t disk_hits = 0;    // choices found among those loaded from the disk
  int64_t memory_hits = 0;  // choices made or loaded earlier in this process
};
GemmAutotuneStats gemm_autotune_stats();
// Forgets the choices this process holds (tests: the next lookup reads the disk again).
void clear_gemm_autotune_memory();

}  // namespace kiln::compiler
