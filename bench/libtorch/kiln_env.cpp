// Kiln's thread count, vector level and build facts for the reports.
#include "bench/libtorch/timing.h"
#include "kiln/backend/cpu/blas.h"
#include "kiln/kiln.h"

namespace bench {

void set_kiln_threads(int n) { kiln::set_num_threads(n); }
int kiln_threads() { return kiln::get_num_threads(); }
std::string kiln_bf16_matmul_path() { return kiln::cpu::bf16_gemm_path(); }
std::string kiln_f32_matmul_path() { return kiln::cpu::f32_gemm_path(); }
std::string kiln_cpu_capability() { return kiln::get_cpu_capability(); }

}  // namespace bench
