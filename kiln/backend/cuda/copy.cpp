#include "kiln/backend/cuda/copy.h"

#include "kiln/backend/cuda/backend.h"
#include "kiln/backend/cuda/device_assert.h"
#include "kiln/backend/cuda/graphs.h"
#include "kiln/backend/cuda/host_allocator.h"
#include "kiln/backend/cuda/pointwise_kernel.h"
#include "kiln/backend/cuda/runtime.h"
#include "kiln/core/cpu_fallback.h"
#include "kiln/core/pending_write.h"

namespace kiln::cuda {
namespace {

// A non-blocking copy into pinned host memory, still in flight: reading the host tensor waits
// for it (and raises the device's pending assertions), where PyTorch would let the program read
// the bytes before they arrive.
class CopyToHost final : public PendingWrite {
 public:
  CopyToHost(cudaEvent_t done, int device) : done_(done), device_(device) {}
  ~CopyToHost() override { cudaEventDestroy(done_); }
  void wait_for_write() override {
    detail::check(cudaEventSynchronize(done_), "copy_: a non-blocking copy to the host");
    check_device_asserts(device_);
  }

 private:
  cudaEvent_t done_;
  int device_;
};

// dst <- src as one asynchronous transfer between pinned host memory and the device.
void copy_async(const Tensor& dst, const Tensor& src, size_t nbytes) {
  const cudaStream_t stream = detail::current_stream();
  KILN_CHECK(!capturing(stream),
             "copy_: a non-blocking copy between pinned memory and the device is not captured "
             "into CUDA graphs yet; move it out of the captured region");
  void* d = dst.data_ptr();
  const void* s = src.data_ptr();
  detail::check(cudaMemcpyAsync(d, s, nbytes, cudaMemcpyDefault, stream), "copy_: cudaMemcpyAsync");
  host_allocator().record_use(dst.is_cpu() ? d : s, stream);
  if (!dst.is_cpu()) return;
  cudaEvent_t done;
  detail::check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "copy_: an event");
  detail::check(cudaEventRecord(done, stream), "copy_: recording a copy's event");
  const Device device = src.device();
  dst.impl()->storage()->set_pending_write(std::make_shared<CopyToHost>(
      done, device.has_index() ? device.index() : detail::current_device()));
}

// dst <- src as one transfer of bytes, when that is all the copy is; without waiting for the
// device when non_blocking and the host side is pinned.
bool copy_dense(const Tensor& dst, const Tensor& src, bool non_blocking) {
  if (dst.dtype() != src.dtype() || dst.sizes() != src.sizes() || !dst.is_contiguous() ||
      !src.is_contiguous())
    return false;
  const size_t n = static_cast<size_t>(src.numel()) * element_size(src.dtype());
  if (n == 0) return true;
  if (non_blocking && (dst.is_cpu() ? dst.is_pinned() : src.is_cpu() && src.is_pinned())) {
    copy_async(dst, src, n);
    return true;
  }
  backend().copy_bytes(dst.data_ptr(), dst.device(), src.data_ptr(), src.device(), n);
  return true;
}

// dst <- src (src broadcast to dst, converted to its dtype).
void copy_into(const OpDef& op, const Tensor& dst, const Tensor& src, bool non_blocking,
               const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& attrs) {
  static const OpDef& clone = get_op("clone");
  if (dst.device() == src.device() || (src.is_cpu() && src.dim() == 0)) {
    std::vector<Tensor> to{dst};
    if (run_pointwise(clone, {src}, to, {})) return;
  } else if (copy_dense(dst, src, non_blocking)) {
    return;
  }
  run_on_cpu(op, Device(kCUDA, detail::current_device()), in, out, attrs);
}

}  // namespace

void register_copy_kernels() {
  set_kernel("_to_copy", kCUDA,
             [](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& attrs) {
               const bool non_blocking = !attrs.is_none(2) && attrs.b(2);
               copy_into(get_op("_to_copy"), out[0], in[0], non_blocking, in, out, attrs);
             });
  set_kernel("copy_", kCUDA,
             [](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& attrs) {
               const bool non_blocking = !attrs.is_none(0) && attrs.b(0);
               copy_into(get_op("copy_"), in[0], in[1], non_blocking, in, out, attrs);
             });
}

}  // namespace kiln::cuda
