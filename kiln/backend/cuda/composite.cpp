// CUDA kernels for ops whose CPU kernels write memory directly but which are simple on the
// device: empty (nothing to do), fill_ and full (the pointwise copy kernel from a host scalar),
// arange and tril/triu (small generated kernels), cat and the adjoints of non-overlapping views
// (copies into views of the output), and the sdpa math path (its kernel is Kiln ops).
#include "kiln/backend/cuda/composite.h"

#include "kiln/backend/cuda/device_assert.h"
#include "kiln/backend/cuda/generated_kernels.h"
#include "kiln/backend/cuda/op_util.h"
#include "kiln/backend/cuda/pointwise_kernel.h"
#include "kiln/compile/codegen/c_types.h"
#include "kiln/core/grad_mode.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/nn/attention_util.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/registry.h"
#include "kiln/ops/shape/util.h"

namespace kiln::cuda {
namespace {

constexpr unsigned kThreads = 256;

// out[i] = start + step * i, in double for floating outputs and int64 for integers.
constexpr const char* kArange = R"cuda(
extern "C" __global__ void KERNEL(T* out, int64_t n, Calc start, Calc step) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = static_cast<T>(static_cast<Compute>(start + step * static_cast<Calc>(i)));
}
)cuda";

// out = x with the elements above (tril) or below (triu) diagonal k of each [m, n] matrix zeroed;
// x and out contiguous.
constexpr const char* kTriangle = R"cuda(
extern "C" __global__ void KERNEL(const T* x, T* out, int64_t total, int64_t m, int64_t n,
                                  int64_t k, int upper) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    const int64_t j = i % n, r = (i / n) % m;
    const bool keep = upper ? j >= r + k : j <= r + k;
    out[i] = keep ? x[i] : T(0);
  }
}
)cuda";

void launch_over(const std::string& op, cudaKernel_t fn, int dev, int64_t n, void** params) {
  launch_kernel(op, fn, grid_stride_blocks(dev, n, kThreads), dim3(kThreads), params);
}

// Every element of t = value, through the copy kernel reading the value as a 0-dim host tensor
// of t's dtype (a kernel argument); false when that kernel does not take the call.
bool fill_with(const Tensor& t, const Scalar& value) {
  static const OpDef& clone = get_op("clone");
  if (t.numel() == 0) return true;
  std::vector<Tensor> out{t};
  return run_pointwise(clone, {scalar_tensor(value, TensorOptions(t.dtype()))}, out, {});
}

// fill_(self, value) and full(size, value, dtype, device).
void fill(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  static const OpDef& op = get_op("fill_");
  if (!fill_with(in[0], a.scalar(0))) cpu_fallback(op, in, out, a);
}
void full(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  static const OpDef& op = get_op("full");
  if (!fill_with(out[0], a.scalar(1))) cpu_fallback(op, in, out, a);
}

void arange(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  static const OpDef& op = get_op("arange");
  const Tensor& y = out[0];
  const ScalarType dt = y.dtype();
  if (y.numel() == 0) return;
  if (!y.is_contiguous() || dt == kBool) return cpu_fallback(op, in, out, a);
  const bool integral = is_integral(dt) && !a.scalar(0).is_floating_point() &&
                        !a.scalar(1).is_floating_point() && !a.scalar(2).is_floating_point();
  const int dev = device_of(y);
  const std::string name =
      std::string("kiln_arange_") + std::string(dtype_name(dt)) + (integral ? "_int" : "_float");
  const std::string types = "using T = " + compiler::storage_type(dt) +
                            ";\nusing Compute = " + compiler::compute_type(dt) +
                            ";\nusing Calc = " + (integral ? "int64_t" : "double") + ";\n";
  const cudaKernel_t fn =
      generated_kernel(dev, name, [&] { return kernel_source(types, kArange, name); });
  void* p = y.data_ptr();
  int64_t n = y.numel();
  if (integral) {
    int64_t start = a.scalar(0).to_long(), step = a.scalar(2).to_long();
    void* params[] = {&p, &n, &start, &step};
    launch_over("arange", fn, dev, n, params);
  } else {
    double start = a.f(0), step = a.f(2);
    void* params[] = {&p, &n, &start, &step};
    launch_over("arange", fn, dev, n, params);
  }
}

KernelFn triangle(const char* op_name, bool upper) {
  return [op_name, upper](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
    NoGradGuard no_grad;
    const Tensor& y = out[0];
    if (y.numel() == 0) return;
    const Tensor x = in[0].contiguous();
    const Tensor dst = y.is_contiguous() ? y : empty(y.sizes(), y.options());
    const int dev = device_of(y);
    const std::string name =
        std::string("kiln_") + op_name + "_" + std::string(dtype_name(y.dtype()));
    const std::string types = "using T = " + compiler::storage_type(y.dtype()) + ";\n";
    const cudaKernel_t fn =
        generated_kernel(dev, name, [&] { return kernel_source(types, kTriangle, name); });
    const void* xp = x.data_ptr();
    void* yp = dst.data_ptr();
    int64_t total = y.numel(), m = y.size(-2), n = y.size(-1), k = a.i(0);
    int up = upper ? 1 : 0;
    void* params[] = {&xp, &yp, &total, &m, &n, &k, &up};
    launch_over(op_name, fn, dev, total, params);
    if (!dst.is_same(y)) y.copy_(dst);
  };
}

// cat: each input copied into its slice of the output (the copy kernel converts dtypes and
// reads any strides).
void cat(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  NoGradGuard no_grad;
  const Tensor& y = out[0];
  if (y.numel() == 0) return;
  const int64_t dim = meta::wrap_dim("cat", a.i(0), y.dim());
  int64_t along = 0;
  for (const Tensor& t : in) {
    if (t.dim() == 1 && t.numel() == 0) continue;  // legacy empty inputs take no part
    const int64_t n = t.size(dim);
    if (n > 0) y.narrow(dim, along, n).copy_(t);
    along += n;
  }
}

// <view>_backward for views whose elements are distinct (slice, select, diagonal): zeros, then
// the gradient copied into the forward view of them.
KernelFn view_backward(const char* forward) {
  return [forward](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
    NoGradGuard no_grad;
    const Tensor& y = out[0];
    const TensorSpec v = get_op(forward).meta_({y}, shape::drop_attrs(a, 1)).at(0);
    y.fill_(0);
    shape::raw_view(y, v.sizes, v.strides.empty() ? contiguous_strides(v.sizes) : v.strides,
                    v.storage_offset)
        .copy_(in[0]);
  };
}

}  // namespace

void register_composite_kernels() {
  set_kernel("empty", kCUDA, [](const std::vector<Tensor>&, std::vector<Tensor>&, const Attrs&) {});
  set_kernel("fill_", kCUDA, fill);
  set_kernel("full", kCUDA, full);
  set_kernel("arange", kCUDA, arange);
  set_kernel("tril", kCUDA, triangle("tril", false));
  set_kernel("triu", kCUDA, triangle("triu", true));
  set_kernel("cat", kCUDA, cat);
  for (const char* view : {"slice", "select", "diagonal"})
    set_kernel(std::string(view) + "_backward", kCUDA, view_backward(view));
  set_kernel("scaled_dot_product_attention", kCUDA, attention::math_kernel);
}

}  // namespace kiln::cuda
