// Installs the generated pointwise kernels (pointwise_kernel.h) as the CUDA kernels of every op
// with a pointwise lowering; a call they cannot express runs through the CPU fallback.
#include "kiln/backend/cuda/pointwise_kernel.h"
#include "kiln/backend/cuda/runtime.h"
#include "kiln/core/cpu_fallback.h"

namespace kiln::cuda {

void register_pointwise_kernels() {
  for (const OpDef* op : all_ops()) {
    if (op->lowering_.kind != lowering::Lowering::Kind::Pointwise) continue;
    KernelFn fallback = [op](const std::vector<Tensor>& in, std::vector<Tensor>& out,
                             const Attrs& attrs) {
      run_on_cpu(*op, Device(kCUDA, detail::current_device()), in, out, attrs);
    };
    set_kernel(op->name, kCUDA, make_pointwise_kernel(*op, std::move(fallback)));
  }
}

}  // namespace kiln::cuda
