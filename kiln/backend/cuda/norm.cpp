#include "kiln/backend/cuda/norm.h"

#include <algorithm>

#include "kiln/backend/cuda/device_assert.h"
#include "kiln/backend/cuda/generated_kernels.h"
#include "kiln/backend/cuda/op_util.h"
#include "kiln/compile/codegen/c_types.h"
#include "kiln/core/error.h"
#include "kiln/core/grad_mode.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/registry.h"

namespace kiln::cuda {
namespace {

constexpr unsigned kThreads = 256;  // 8 warps: 8 rows per block

constexpr const char* kCommon = R"cuda(
__device__ inline Acc warp_sum(Acc v) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}
__device__ inline Acc load(T v) { return static_cast<Acc>(v); }
__device__ inline float inv_sqrt(float v) { return 1.0f / ::sqrtf(v); }
__device__ inline double inv_sqrt(double v) { return 1.0 / ::sqrt(v); }
)cuda";

constexpr const char* kForward = R"cuda(
extern "C" __global__ void KERNEL(const T* x, const T* w, const T* b, T* y, Acc* mean_out,
                                  Acc* rstd_out, int64_t rows, int64_t n, double eps,
                                  int centered) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t r = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; r < rows;
       r += warps) {
    const T* p = x + r * n;
    Acc mean = 0;
    if (centered) {
      Acc s = 0;
      for (int64_t i = lane; i < n; i += 32) s += load(p[i]);
      mean = warp_sum(s) / static_cast<Acc>(n);
    }
    Acc v = 0;
    for (int64_t i = lane; i < n; i += 32) {
      const Acc d = load(p[i]) - mean;
      v += d * d;
    }
    const Acc rstd = inv_sqrt(warp_sum(v) / static_cast<Acc>(n) + static_cast<Acc>(eps));
    T* q = y + r * n;
    for (int64_t i = lane; i < n; i += 32) {
      Acc h = (load(p[i]) - mean) * rstd;
      if (w) h *= load(w[i]);
      if (b) h += load(b[i]);
      q[i] = static_cast<T>(h);
    }
    if (lane == 0) {
      if (mean_out) mean_out[r] = mean;
      rstd_out[r] = rstd;
    }
  }
}
)cuda";

// gx = rstd * (g - h * mean(g * h) - mean(g)) with g = gy * w, h = (x - mean) * rstd; the last
// term only when centered.
constexpr const char* kBackward = R"cuda(
extern "C" __global__ void KERNEL(const T* gy, const T* x, const Acc* mean_in, const Acc* rstd_in,
                                  const T* w, T* gx, int64_t rows, int64_t n, int centered) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t r = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; r < rows;
       r += warps) {
    const T* pg = gy + r * n;
    const T* px = x + r * n;
    const Acc mean = centered ? mean_in[r] : Acc(0), rstd = rstd_in[r];
    Acc sum_gh = 0, sum_g = 0;
    for (int64_t i = lane; i < n; i += 32) {
      const Acc g = w ? load(pg[i]) * load(w[i]) : load(pg[i]);
      sum_gh += g * ((load(px[i]) - mean) * rstd);
      sum_g += g;
    }
    const Acc a = warp_sum(sum_gh) / static_cast<Acc>(n);
    const Acc c = centered ? warp_sum(sum_g) / static_cast<Acc>(n) : Acc(0);
    T* q = gx + r * n;
    for (int64_t i = lane; i < n; i += 32) {
      const Acc g = w ? load(pg[i]) * load(w[i]) : load(pg[i]);
      const Acc h = (load(px[i]) - mean) * rstd;
      q[i] = static_cast<T>(rstd * (g - h * a - c));
    }
  }
}
)cuda";

// Column sums over a chunk of rows: gw[chunk, j] = sum gy * h, gb[chunk, j] = sum gy.
constexpr const char* kColumns = R"cuda(
extern "C" __global__ void KERNEL(const T* gy, const T* x, const Acc* mean_in, const Acc* rstd_in,
                                  Acc* gw, Acc* gb, int64_t rows, int64_t n,
                                  int64_t rows_per_chunk) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const int64_t chunk = blockIdx.y, begin = chunk * rows_per_chunk;
  const int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
  Acc sw = 0, sb = 0;
  for (int64_t r = begin; r < end; ++r) {
    const Acc g = load(gy[r * n + j]);
    const Acc mean = mean_in ? mean_in[r] : Acc(0);
    sw += g * ((load(x[r * n + j]) - mean) * rstd_in[r]);
    sb += g;
  }
  gw[chunk * n + j] = sw;
  if (gb) gb[chunk * n + j] = sb;
}
)cuda";

std::string kernel_name(NormKernel kind, ScalarType dt) {
  const char* k = kind == NormKernel::Forward    ? "forward"
                  : kind == NormKernel::Backward ? "backward"
                                                 : "columns";
  return std::string("kiln_norm_") + k + "_" + std::string(dtype_name(dt));
}

cudaKernel_t load_kernel(int dev, NormKernel kind, ScalarType dt) {
  const std::string name = kernel_name(kind, dt);
  return generated_kernel(dev, name, [&] { return norm_source(kind, dt, name); });
}

const void* data_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

// t as a contiguous tensor of dtype dt on the device (undefined stays undefined).
Tensor dense(const Tensor& t, ScalarType dt) {
  if (!t.defined()) return t;
  return (t.dtype() == dt ? t : t.to(dt)).contiguous();
}

// Writes `computed` into `out` (an op's output of any strides and dtype).
void store(const Tensor& out, const Tensor& computed) {
  if (!computed.is_same(out)) out.copy_(computed.view(out.sizes()));
}

// A contiguous result of dt with out's sizes: out itself when it already is one.
Tensor result_like(const Tensor& out, ScalarType dt) {
  if (out.dtype() == dt && out.is_contiguous()) return out;
  return empty(out.sizes(), TensorOptions(dt).device(out.device()));
}

// layer_norm (in: x, w?, b?; out: y, mean, rstd) and rms_norm (in: x, w?; out: y, rstd); attrs:
// normalized_shape, eps.
KernelFn forward_kernel(const char* op_name, bool centered) {
  return [op_name, centered](const std::vector<Tensor>& in, std::vector<Tensor>& out,
                             const Attrs& a) {
    const OpDef& op = get_op(op_name);
    const Tensor& input = in[0];
    const int dev = device_of(out[0]);
    if (!is_floating_point(input.dtype()) ||
        !on_device({in[0], in[1], centered ? in[2] : Tensor()}, dev))
      return cpu_fallback(op, in, out, a);
    NoGradGuard no_grad;
    const ScalarType dt = input.dtype(), acc = float_accumulator(dt);
    int64_t n = 1;
    for (int64_t s : a.ints(0)) n *= s;
    int64_t rows = n == 0 ? 0 : input.numel() / n;
    const Tensor x = input.contiguous(), w = dense(in[1], dt),
                 b = centered ? dense(in[2], dt) : Tensor();
    Tensor y = result_like(out[0], dt);
    Tensor mean = centered ? result_like(out[1], acc) : Tensor();
    Tensor rstd = result_like(out[centered ? 2 : 1], acc);
    if (rows > 0 && n > 0) {
      const void *xp = x.data_ptr(), *wp = data_or_null(w), *bp = data_or_null(b);
      void *yp = y.data_ptr(), *mp = centered ? mean.data_ptr() : nullptr, *rp = rstd.data_ptr();
      double eps = a.f(1);
      int c = centered ? 1 : 0;
      void* params[] = {&xp, &wp, &bp, &yp, &mp, &rp, &rows, &n, &eps, &c};
      launch_kernel(op.name, load_kernel(dev, NormKernel::Forward, dt),
                    grid_stride_blocks(dev, rows * 32, kThreads), dim3(kThreads), params);
    }
    store(out[0], y);
    if (centered) store(out[1], mean);
    store(out[centered ? 2 : 1], rstd);
  };
}

// layer_norm_backward (in: gy, x, mean, rstd, w?; out: gx, gw, gb) and rms_norm_backward (in:
// gy, x, rstd, w?; out: gx, gw); attrs: normalized_shape.
KernelFn backward_kernel(const char* op_name, bool centered) {
  return
      [op_name, centered](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
        const OpDef& op = get_op(op_name);
        const int r_slot = centered ? 3 : 2, w_slot = centered ? 4 : 3;
        const int dev = device_of(out[0]);
        if (!is_floating_point(in[1].dtype()) || !on_device(in, dev))
          return cpu_fallback(op, in, out, a);
        NoGradGuard no_grad;
        const ScalarType dt = in[1].dtype(), acc = float_accumulator(dt);
        const int64_t n = out[1].numel();
        int64_t rows = n == 0 ? 0 : in[1].numel() / n;
        const Tensor gy = dense(in[0], dt), x = in[1].contiguous();
        const Tensor mean = centered ? dense(in[2], acc) : Tensor(), rstd = dense(in[r_slot], acc);
        const Tensor w = dense(in[w_slot], dt);
        Tensor gx = result_like(out[0], dt);
        if (rows == 0 || n == 0) {
          for (const Tensor& o : out) o.fill_(0);
          return;
        }
        const void *gp = gy.data_ptr(), *xp = x.data_ptr(), *mp = data_or_null(mean),
                   *rp = rstd.data_ptr(), *wp = data_or_null(w);
        void* gxp = gx.data_ptr();
        int64_t nn = n;
        int c = centered ? 1 : 0;
        void* params[] = {&gp, &xp, &mp, &rp, &wp, &gxp, &rows, &nn, &c};
        launch_kernel(op.name, load_kernel(dev, NormKernel::Backward, dt),
                      grid_stride_blocks(dev, rows * 32, kThreads), dim3(kThreads), params);
        store(out[0], gx);
        // Column sums in chunks of rows, enough chunks to fill the device; then over the chunks.
        const int64_t col_blocks = (n + kThreads - 1) / kThreads;
        const int64_t want = std::max<int64_t>(1, int64_t{multiprocessors(dev)} * 8 / col_blocks);
        const int64_t chunks = std::min<int64_t>({rows, want, 65535});
        int64_t per_chunk = (rows + chunks - 1) / chunks;
        const int64_t used = (rows + per_chunk - 1) / per_chunk;
        const TensorOptions opts = TensorOptions(acc).device(out[0].device());
        Tensor gw = empty({used, n}, opts), gb = centered ? empty({used, n}, opts) : Tensor();
        void *gwp = gw.data_ptr(), *gbp = centered ? gb.data_ptr() : nullptr;
        void* cparams[] = {&gp, &xp, &mp, &rp, &gwp, &gbp, &rows, &nn, &per_chunk};
        launch_kernel(op.name, load_kernel(dev, NormKernel::Columns, dt),
                      dim3(static_cast<unsigned>(col_blocks), static_cast<unsigned>(used)),
                      dim3(kThreads), cparams);
        store(out[1], gw.sum(0).to(out[1].dtype()));
        if (centered) store(out[2], gb.sum(0).to(out[2].dtype()));
      };
}

}  // namespace

std::string norm_source(NormKernel kind, ScalarType dtype, const std::string& name) {
  KILN_CHECK(is_floating_point(dtype), "cuda: no norm kernel for ", dtype);
  const char* kernel = kind == NormKernel::Forward    ? kForward
                       : kind == NormKernel::Backward ? kBackward
                                                      : kColumns;
  return kernel_source("using T = " + compiler::storage_type(dtype) + ";\nusing Acc = " +
                           compiler::storage_type(float_accumulator(dtype)) + ";\n" + kCommon,
                       kernel, name);
}

void register_norm_kernels() {
  set_kernel("layer_norm", kCUDA, forward_kernel("layer_norm", true));
  set_kernel("rms_norm", kCUDA, forward_kernel("rms_norm", false));
  set_kernel("layer_norm_backward", kCUDA, backward_kernel("layer_norm_backward", true));
  set_kernel("rms_norm_backward", kCUDA, backward_kernel("rms_norm_backward", false));
}

}  // namespace kiln::cuda
