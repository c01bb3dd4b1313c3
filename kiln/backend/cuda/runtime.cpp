#include "kiln/backend/cuda/runtime.h"

#include <vector>

#include "kiln/core/error.h"

namespace kiln::cuda::detail {
namespace {
// Each thread's current stream per device; null is the device's default stream.
thread_local std::vector<cudaStream_t> t_streams;
}  // namespace

void check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // clear a sticky-free error so later calls see their own
  KILN_FAIL(what, ": ", cudaGetErrorName(err), ": ", cudaGetErrorString(err));
}

int current_device() {
  int d = 0;
  check(cudaGetDevice(&d), "cuda: cudaGetDevice");
  return d;
}

cudaStream_t current_stream() {
  const size_t d = static_cast<size_t>(current_device());
  return d < t_streams.size() ? t_streams[d] : nullptr;
}

void set_current_stream(int device, cudaStream_t stream) {
  if (t_streams.size() <= static_cast<size_t>(device)) t_streams.resize(device + 1, nullptr);
  t_streams[device] = stream;
}

}  // namespace kiln::cuda::detail
