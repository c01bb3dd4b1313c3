#include "kiln/backend/cuda/op_util.h"

#include <algorithm>

#include "kiln/backend/cuda/generated_kernels.h"
#include "kiln/backend/cuda/runtime.h"
#include "kiln/core/cpu_fallback.h"

namespace kiln::cuda {

int device_of(const Tensor& t) {
  return t.device().has_index() ? t.device().index() : detail::current_device();
}

bool on_device(const std::vector<Tensor>& ts, int dev) {
  for (const Tensor& t : ts)
    if (t.defined() && (!t.is_cuda() || device_of(t) != dev)) return false;
  return true;
}

void cpu_fallback(const OpDef& op, const std::vector<Tensor>& in, std::vector<Tensor>& out,
                  const Attrs& attrs) {
  run_on_cpu(op, Device(kCUDA, detail::current_device()), in, out, attrs);
}

const char* unsigned_type(int64_t bytes) {
  switch (bytes) {
    case 1:
      return "unsigned char";
    case 2:
      return "unsigned short";
    case 4:
      return "unsigned int";
    case 8:
      return "unsigned long long";
  }
  KILN_FAIL("cuda: no kernel moves elements of ", bytes, " bytes");
}

dim3 grid_stride_blocks(int dev, int64_t n, unsigned threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  const int64_t resident = int64_t{multiprocessors(dev)} * (2048 / threads);
  return dim3(static_cast<unsigned>(std::max<int64_t>(1, std::min(blocks, resident))));
}

}  // namespace kiln::cuda
