#pragma once
// C++ code generation for the codegen backend (ARCHITECTURE.md §7): one translation unit per
// graph holding one function per fused kernel. Each kernel loops over its iteration shape with
// views and broadcasts folded into strides; symbolic sizes and strides are parameters evaluated
// per call, so one kernel serves every size. Inner loops over float32 (and 16-bit floats,
// computed in float32) run on vectors with the eager kernels' own vector math
// (kiln/backend/cpu/vec_math.inc), the rest through the scalar functors of
// kiln/backend/scalar.h: the same definitions as eager, the same numbers.
#include <string>
#include <vector>

#include "kiln/backend/cpu/cpu_capability.h"
#include "kiln/compile/codegen/schedule.h"

namespace kiln::compiler {

struct KernelSource {
  std::string symbol;          // the extern "C" function's name
  std::vector<int> buffers;    // values whose data the kernel gets, in order (loads, stores)
  std::vector<SymInt> params;  // sizes and strides it reads, evaluated per call
  // Buffers of one double per row after `buffers` (an nll_loss gather's losses and weights).
  int per_row_scratch = 0;
  bool vectorised = false;
};

struct GeneratedUnit {
  std::string source;
  std::vector<KernelSource> kernels;  // one per Schedule::kernels entry
};

// level: the vector instructions the kernels may use (Note [ISA dispatch]).
GeneratedUnit generate_cpp(const Graph& graph, const Schedule& schedule, cpu::CpuCapability level);

}  // namespace kiln::compiler
