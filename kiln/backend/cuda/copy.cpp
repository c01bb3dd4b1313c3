#include "kiln/backend/cuda/copy.h"

#include "kiln/backend/cuda/backend.h"
#include "kiln/backend/cuda/pointwise_kernel.h"
#include "kiln/backend/cuda/runtime.h"
#include "kiln/core/cpu_fallback.h"

namespace kiln::cuda {
namespace {

// dst <- src as one transfer of bytes, when that is all the copy is.
bool copy_dense(const Tensor& dst, const Tensor& src) {
  if (dst.dtype() != src.dtype() || dst.sizes() != src.sizes() || !dst.is_contiguous() ||
      !src.is_contiguous())
    return false;
  const size_t n = static_cast<size_t>(src.numel()) * element_size(src.dtype());
  backend().copy_bytes(dst.data_ptr(), dst.device(), src.data_ptr(), src.device(), n);
  return true;
}

// dst <- src (src broadcast to dst, converted to its dtype).
void copy_into(const OpDef& op, const Tensor& dst, const Tensor& src, const std::vector<Tensor>& in,
               std::vector<Tensor>& out, const Attrs& attrs) {
  static const OpDef& clone = get_op("clone");
  if (dst.device() == src.device() || (src.is_cpu() && src.dim() == 0)) {
    std::vector<Tensor> to{dst};
    if (run_pointwise(clone, {src}, to, {})) return;
  } else if (copy_dense(dst, src)) {
    return;
  }
  run_on_cpu(op, Device(kCUDA, detail::current_device()), in, out, attrs);
}

}  // namespace

void register_copy_kernels() {
  set_kernel("_to_copy", kCUDA,
             [](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& attrs) {
               copy_into(get_op("_to_copy"), out[0], in[0], in, out, attrs);
             });
  set_kernel("copy_", kCUDA,
             [](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& attrs) {
               copy_into(get_op("copy_"), in[0], in[1], in, out, attrs);
             });
}

}  // namespace kiln::cuda
