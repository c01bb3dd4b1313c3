#include "kiln/core/cuda.h"

#include "kiln/core/error.h"

namespace kiln::cuda {

size_t device_count() { return 0; }

bool is_available() { return device_count() > 0; }

bool cudnn_is_available() { return false; }

void manual_seed(uint64_t /*seed*/) {}

void manual_seed_all(uint64_t /*seed*/) {}

void synchronize(int64_t device_index) {
  KILN_CHECK(device_index == -1 ||
                 (device_index >= 0 && static_cast<size_t>(device_index) < device_count()),
             "cuda::synchronize: device index ", device_index, " is out of range (", device_count(),
             " CUDA devices; Kiln is built without a CUDA backend)");
}

}  // namespace kiln::cuda
