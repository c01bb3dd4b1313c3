#pragma once
// Which vector instruction set Kiln's CPU kernels run with, as PyTorch's
// torch.backends.cpu.get_cpu_capability(): "avx2", "avx512" or "avx512_bf16". The best the CPU
// supports is chosen at start-up; the environment variable KILN_CPU_CAPABILITY lowers it
// (docs/ops.md, "CPU vector levels").
#include <string>

namespace kiln {

std::string get_cpu_capability();

}  // namespace kiln
