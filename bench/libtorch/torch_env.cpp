// libtorch's thread count, version and vector level for the reports.
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <torch/version.h>

#include "bench/libtorch/timing.h"

namespace bench {

void set_torch_threads(int n) { at::set_num_threads(n); }
int torch_threads() { return at::get_num_threads(); }
std::string torch_version() { return TORCH_VERSION; }
std::string torch_cpu_capability() { return at::get_cpu_capability(); }

}  // namespace bench
