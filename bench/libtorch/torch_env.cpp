// libtorch's thread count and version for the reports.
#include <ATen/Parallel.h>
#include <torch/version.h>

#include "bench/libtorch/timing.h"

namespace bench {

void set_torch_threads(int n) { at::set_num_threads(n); }
int torch_threads() { return at::get_num_threads(); }
std::string torch_version() { return TORCH_VERSION; }

}  // namespace bench
