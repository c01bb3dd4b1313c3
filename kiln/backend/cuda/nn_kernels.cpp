#include "kiln/backend/cuda/nn_kernels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <optional>

#include "kiln/backend/cuda/device_assert.h"
#include "kiln/backend/cuda/generated_kernels.h"
#include "kiln/backend/cuda/op_util.h"
#include "kiln/compile/codegen/c_types.h"
#include "kiln/core/error.h"
#include "kiln/core/grad_mode.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/pool/linear.h"
#include "kiln/ops/pool/util.h"
#include "kiln/ops/registry.h"

namespace kiln::cuda {
namespace {

constexpr unsigned kThreads = 256;

constexpr const char* kLoop = R"cuda(
#define FOR_EACH(i, n)                                                                    \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
__device__ inline Acc load(T v) { return static_cast<Acc>(v); }
)cuda";

// Every thread gets the block's total; the first barrier frees `partial` from the last call.
constexpr const char* kMoments = R"cuda(
__device__ double block_sum(double v, double* partial) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  __syncthreads();
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  double total = 0;
  for (unsigned w = 0; w < blockDim.x / 32; ++w) total += partial[w];
  return total;
}

extern "C" __global__ void KERNEL(const T* x, double* mean, double* var, int64_t rows,
                                  int64_t row_stride, int64_t segments, int64_t segment_stride,
                                  int64_t len) {
  __shared__ double partial[32];
  const int64_t count = segments * len;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * row_stride;
    double s = 0;
    for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
      const int64_t seg = k / len;
      s += static_cast<double>(load(row[seg * segment_stride + k - seg * len]));
    }
    const double m = block_sum(s, partial) / static_cast<double>(count);
    double ss = 0;
    for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
      const int64_t seg = k / len;
      const double d = static_cast<double>(load(row[seg * segment_stride + k - seg * len])) - m;
      ss += d * d;
    }
    const double v = block_sum(ss, partial) / static_cast<double>(count);
    if (threadIdx.x == 0) {
      mean[r] = m;
      var[r] = v;
    }
  }
}
)cuda";

constexpr const char* kAffine = R"cuda(
extern "C" __global__ void KERNEL(const T* x, T* y, const Acc* scale, const Acc* shift, int64_t n,
                                  int64_t inner, int64_t rows) {
  FOR_EACH(i, n) {
    const int64_t r = (i / inner) % rows;
    y[i] = static_cast<T>(load(x[i]) * scale[r] + shift[r]);
  }
}
)cuda";

// The first NaN of a window wins, as on the CPU.
constexpr const char* kMaxPool = R"cuda(
extern "C" __global__ void KERNEL(const T* x, T* values, int64_t* indices, const int64_t* spans,
                                  int64_t planes, int64_t D, int64_t H, int64_t W, int64_t OD,
                                  int64_t OH, int64_t OW) {
  FOR_EACH(i, planes * OD * OH * OW) {
    const int64_t ow = i % OW, oh = i / OW % OH, od = i / (OW * OH) % OD, p = i / (OW * OH * OD);
    const int64_t* sd = spans + 3 * od;
    const int64_t* sh = spans + 3 * (OD + oh);
    const int64_t* sw = spans + 3 * (OD + OH + ow);
    const T* plane = x + p * D * H * W;
    Acc best = -static_cast<Acc>(__longlong_as_double(0x7ff0000000000000LL));
    int64_t at = (sd[0] * H + sh[0]) * W + sw[0];
    for (int64_t id = sd[0]; id < sd[1]; id += sd[2])
      for (int64_t ih = sh[0]; ih < sh[1]; ih += sh[2])
        for (int64_t iw = sw[0]; iw < sw[1]; iw += sw[2]) {
          const int64_t j = (id * H + ih) * W + iw;
          const Acc v = load(plane[j]);
          if (v > best || (v != v && best == best)) {
            best = v;
            at = j;
          }
        }
    values[i] = static_cast<T>(best);
    indices[i] = at;
  }
}
)cuda";

constexpr const char* kMaxPoolBackward = R"cuda(
extern "C" __global__ void KERNEL(const T* grad, const int64_t* indices, Acc* out, int64_t n,
                                  int64_t plane_out, int64_t plane_in, KilnDeviceAssert* record,
                                  unsigned long long launch) {
  FOR_EACH(i, n) {
    const int64_t v = indices[i];
    if (KILN_DEVICE_CHECK(v >= 0 && v < plane_in, record, launch,
                          "index {value} is out of range for an input plane of {bound} elements",
                          v, plane_in, 0))
      atomicAdd(out + i / plane_out * plane_in + v, load(grad[i]));
  }
}
)cuda";

// Weights multiply in the CPU's order, (depth * height) * width, and accumulate in double.
constexpr const char* kSeparable = R"cuda(
extern "C" __global__ void KERNEL(const T* x, T* y, const int64_t* taps, const double* weight,
                                  int64_t planes, int64_t D, int64_t H, int64_t W, int64_t OD,
                                  int64_t OH, int64_t OW) {
  const int64_t* index = taps + OD + OH + OW + 3;
  FOR_EACH(i, planes * OD * OH * OW) {
    const int64_t ow = i % OW, oh = i / OW % OH, od = i / (OW * OH) % OD, p = i / (OW * OH * OD);
    const int64_t* bd = taps + od;
    const int64_t* bh = taps + OD + 1 + oh;
    const int64_t* bw = taps + OD + OH + 2 + ow;
    const T* plane = x + p * D * H * W;
    double acc = 0;
    for (int64_t k = bd[0]; k < bd[1]; ++k)
      for (int64_t a = bh[0]; a < bh[1]; ++a) {
        const double wda = weight[k] * weight[a];
        const T* row = plane + (index[k] * H + index[a]) * W;
        for (int64_t b = bw[0]; b < bw[1]; ++b)
          acc += wda * weight[b] * static_cast<double>(load(row[index[b]]));
      }
    y[i] = static_cast<T>(static_cast<Acc>(acc));
  }
}
)cuda";

const char* kind_name(NnKernel kind) {
  switch (kind) {
    case NnKernel::Moments:
      return "moments";
    case NnKernel::Affine:
      return "affine";
    case NnKernel::MaxPool:
      return "max_pool";
    case NnKernel::MaxPoolBackward:
      return "max_pool_backward";
    case NnKernel::Separable:
      return "separable";
  }
  return "";
}

const char* body_of(NnKernel kind) {
  switch (kind) {
    case NnKernel::Moments:
      return kMoments;
    case NnKernel::Affine:
      return kAffine;
    case NnKernel::MaxPool:
      return kMaxPool;
    case NnKernel::MaxPoolBackward:
      return kMaxPoolBackward;
    case NnKernel::Separable:
      return kSeparable;
  }
  return "";
}

cudaKernel_t load_kernel(int dev, NnKernel kind, ScalarType dt) {
  const std::string name =
      std::string("kiln_nn_") + kind_name(kind) + "_" + std::string(dtype_name(dt));
  return generated_kernel(dev, name, [&] { return nn_source(kind, dt, name); });
}

void launch_over(const OpDef& op, NnKernel kind, ScalarType dt, int dev, int64_t n, void** params) {
  launch_kernel(op.name, load_kernel(dev, kind, dt), grid_stride_blocks(dev, n, kThreads),
                dim3(kThreads), params);
}

// A contiguous result of dt with out's sizes: out itself when it already is one.
Tensor result_like(const Tensor& out, ScalarType dt) {
  if (out.dtype() == dt && out.is_contiguous()) return out;
  return empty(out.sizes(), TensorOptions(dt).device(out.device()));
}

void store(const Tensor& out, const Tensor& computed) {
  if (!computed.is_same(out)) out.copy_(computed.view(out.sizes()));
}

// A host table on like's device (the dtype given: a list of doubles would become float32).
template <class T>
Tensor upload(const std::vector<T>& values, ScalarType dtype, const Tensor& like) {
  return tensor(values, TensorOptions(dtype)).to(like.device());
}

// Whether the call is one the kernels here take: floating tensors, all on out[0]'s device.
bool takes(const std::vector<Tensor>& in, const std::vector<Tensor>& out) {
  return is_floating_point(out[0].dtype()) && on_device(in, device_of(out[0])) &&
         on_device(out, device_of(out[0]));
}

// Every entry is seen as 3-d: a 2-d entry's depth is 1 (pool/util.h).
constexpr int kDims = pool::kMaxSpatial;
using pool::Extent;
using pool::extent;
using pool::Span;

// ---- batch_norm and group_norm ----

struct Moments {
  Tensor mean, var;  // double, one per row
};

// Mean and biased variance of each row of x (contiguous); see NnKernel::Moments.
Moments moments(const OpDef& op, const Tensor& x, int64_t rows, int64_t row_stride,
                int64_t segments, int64_t segment_stride, int64_t len) {
  const TensorOptions opts = TensorOptions(kFloat64).device(x.device());
  Moments m{empty({rows}, opts), empty({rows}, opts)};
  const void* xp = x.data_ptr();
  void *mp = m.mean.data_ptr(), *vp = m.var.data_ptr();
  void* params[] = {&xp, &mp, &vp, &rows, &row_stride, &segments, &segment_stride, &len};
  const int dev = device_of(x);
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(rows, 65535));
  launch_kernel(op.name, load_kernel(dev, NnKernel::Moments, x.dtype()), dim3(blocks),
                dim3(kThreads), params);
  return m;
}

// out[0] = x * scale + shift with scale = w * rstd and shift = b - mean * scale per affine row
// (as the CPU's affine_normalize, in the compute dtype); mean and rstd hold one value per row
// (shape [C] or [N, C]), w and b per channel (the last dim).
void affine(const OpDef& op, const Tensor& x, const Tensor& mean, const Tensor& rstd,
            const Tensor& w, const Tensor& b, const Tensor& out, int64_t inner) {
  const ScalarType dt = x.dtype(), acc = float_accumulator(dt);
  const Tensor scale = (w.defined() ? rstd * w.to(acc) : rstd).contiguous();
  const Tensor shift = (b.defined() ? b.to(acc) - mean * scale : -(mean * scale)).contiguous();
  Tensor y = result_like(out, dt);
  const void *xp = x.data_ptr(), *sp = scale.data_ptr(), *hp = shift.data_ptr();
  void* yp = y.data_ptr();
  int64_t n = x.numel(), rows = scale.numel();
  void* params[] = {&xp, &yp, &sp, &hp, &n, &inner, &rows};
  launch_over(op, NnKernel::Affine, dt, device_of(x), n, params);
  store(out, y);
}

// The saved statistics: mean and 1 / sqrt(var + eps), computed in double and stored in the
// outputs' dtype.
void store_stats(const Tensor& mean, const Tensor& var, double eps, const Tensor& mean_out,
                 const Tensor& rstd_out) {
  mean_out.copy_(mean.view(mean_out.sizes()));
  rstd_out.copy_((var + eps).sqrt().reciprocal().view(rstd_out.sizes()));
}

// running = (1 - momentum) * running + momentum * batch, computed in double.
void update_running(const Tensor& running, const Tensor& batch, double momentum) {
  running.copy_(running.to(kFloat64) * (1 - momentum) + batch * momentum);
}

int64_t inner_size(const Tensor& x) {
  int64_t n = 1;
  for (int64_t d = 2; d < x.dim(); ++d) n *= x.size(d);
  return n;
}

// inputs: input, weight, bias, running_mean, running_var; attrs: training, momentum, eps.
void batch_norm(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  static const OpDef& op = get_op("batch_norm");
  if (!takes(in, out) || in[0].numel() == 0) return cpu_fallback(op, in, out, a);
  NoGradGuard no_grad;
  const bool training = a.b(0);
  const double momentum = a.f(1), eps = a.f(2);
  const Tensor x = in[0].contiguous();
  const int64_t n = x.size(0), c = x.size(1), inner = inner_size(x);
  Moments m;
  if (training) {
    m = moments(op, x, c, inner, n, c * inner, inner);
    const double count = static_cast<double>(n * inner);
    if (in[3].defined()) update_running(in[3], m.mean, momentum);
    if (in[4].defined())
      update_running(in[4], m.var * (count / std::max(count - 1, 1.0)), momentum);
  } else {
    m = {in[3].to(kFloat64), in[4].to(kFloat64)};
  }
  store_stats(m.mean, m.var, eps, out[1], out[2]);
  const ScalarType acc = float_accumulator(x.dtype());
  affine(op, x, out[1].to(acc), out[2].to(acc), in[1], in[2], out[0], inner);
}

// inputs: input, weight, bias; attrs: num_groups, eps. Outputs y, mean (N, G), rstd (N, G).
void group_norm(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  static const OpDef& op = get_op("group_norm");
  if (!takes(in, out) || in[0].numel() == 0) return cpu_fallback(op, in, out, a);
  NoGradGuard no_grad;
  const Tensor x = in[0].contiguous();
  const int64_t n = x.size(0), c = x.size(1), g = a.i(0), inner = inner_size(x);
  const int64_t per_group = c / g * inner;
  const Moments m = moments(op, x, n * g, per_group, 1, 0, per_group);
  store_stats(m.mean, m.var, a.f(1), out[1], out[2]);
  // Each group's statistics for each of its channels: [N, C].
  auto per_channel = [&](const Tensor& t) {
    return t.to(float_accumulator(x.dtype())).view({n, g, 1}).expand({n, g, c / g}).reshape({n, c});
  };
  affine(op, x, per_channel(out[1]), per_channel(out[2]), in[1], in[2], out[0], inner);
}

// ---- max pooling ----

using V = std::vector<int64_t>;
using SpanFn = std::function<Span(int d, int64_t o)>;

// {begin, end, step} of every window along D, then H, then W (a 2-d entry's D is {0, 1, 1}).
V span_table(int spatial, const Extent& out, const SpanFn& span) {
  const int skip = kDims - spatial;
  V table;
  for (int d = 0; d < kDims; ++d)
    for (int64_t o = 0; o < out.size[d]; ++o) {
      const Span s = d < skip ? Span{0, 1, 1} : span(d - skip, o);
      table.insert(table.end(), {s.begin, s.end, s.step});
    }
  return table;
}

// values and indices [N, C, <out>] of x [N, C, <in>] with span(d, o) the window of output o
// along spatial dim d.
void max_pool(const OpDef& op, const Tensor& input, std::vector<Tensor>& out, int spatial,
              const SpanFn& span) {
  const Tensor x = input.contiguous();
  const ScalarType dt = x.dtype();
  const Extent ie = extent(x), oe = extent(out[0]);
  const Tensor spans = upload(span_table(spatial, oe, span), kInt64, x);
  Tensor values = result_like(out[0], dt), indices = result_like(out[1], kInt64);
  const void *xp = x.data_ptr(), *sp = spans.data_ptr();
  void *vp = values.data_ptr(), *ip = indices.data_ptr();
  int64_t planes = pool::planes(x);
  int64_t D = ie.size[0], H = ie.size[1], W = ie.size[2];
  int64_t OD = oe.size[0], OH = oe.size[1], OW = oe.size[2];
  void* params[] = {&xp, &vp, &ip, &sp, &planes, &D, &H, &W, &OD, &OH, &OW};
  launch_over(op, NnKernel::MaxPool, dt, device_of(x), values.numel(), params);
  store(out[0], values);
  store(out[1], indices);
}

// max_pool<spatial>d_with_indices; attrs: kernel_size, stride, padding, dilation, ceil_mode.
KernelFn max_pool_kernel(int spatial) {
  return [spatial](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
    const OpDef& op = get_op(spatial == 3 ? "max_pool3d_with_indices" : "max_pool2d_with_indices");
    if (!takes(in, out) || out[0].numel() == 0) return cpu_fallback(op, in, out, a);
    NoGradGuard no_grad;
    const pool::Window w =
        pool::window(op.name.c_str(), spatial, a.ints(0), a.ints(1), a.ints(2), a.ints(3));
    max_pool(op, in[0], out, spatial, [&](int d, int64_t o) {
      return pool::pool_span(o, in[0].size(d + 2), w.kernel[d], w.pad[d], w.stride[d],
                             w.dilation[d]);
    });
  };
}

// adaptive_max_pool<spatial>d; attrs: output_size.
KernelFn adaptive_max_pool_kernel(int spatial) {
  return [spatial](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
    const OpDef& op = get_op(spatial == 3 ? "adaptive_max_pool3d" : "adaptive_max_pool2d");
    if (!takes(in, out) || out[0].numel() == 0) return cpu_fallback(op, in, out, a);
    NoGradGuard no_grad;
    const V size = a.ints(0);
    max_pool(op, in[0], out, spatial,
             [&](int d, int64_t o) { return pool::adaptive_span(o, in[0].size(d + 2), size[d]); });
  };
}

// grad [N, C, <out>] added at flat per-plane indices into zeros [N, C, <in>]; in float (double
// for float64) as on the CPU.
void max_pool_backward(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  static const OpDef& op = get_op("max_pool_backward");
  if (!takes(in, out)) return cpu_fallback(op, in, out, a);
  NoGradGuard no_grad;
  const Tensor grad = in[0].contiguous(), indices = in[1].contiguous();
  const ScalarType acc = float_accumulator(grad.dtype());
  Tensor sum = result_like(out[0], acc);
  sum.fill_(0);
  if (grad.numel() > 0) {
    const int dev = device_of(grad);
    AssertingLaunch check = asserting_launch(dev, op.name, "kiln_nn_max_pool_backward");
    const void *gp = grad.data_ptr(), *ip = indices.data_ptr();
    void* sp = sum.data_ptr();
    int64_t n = grad.numel(), plane_out = extent(grad).numel(), plane_in = extent(sum).numel();
    void* params[] = {&gp, &ip, &sp, &n, &plane_out, &plane_in, &check.record, &check.id};
    launch_over(op, NnKernel::MaxPoolBackward, grad.dtype(), dev, n, params);
  }
  store(out[0], sum);
}

// x [N, C, <in>] read at flat per-plane indices [N, C, <out>]: the gather kernel over planes.
void max_pool_gather(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  static const OpDef& op = get_op("max_pool_gather");
  if (!takes(in, out) || out[0].numel() == 0) return cpu_fallback(op, in, out, a);
  NoGradGuard no_grad;
  const Tensor &x = in[0], &indices = in[1];
  const int64_t planes = pool::planes(x);
  const Tensor flat = indices.reshape({planes, extent(indices).numel()});
  out[0].copy_(x.reshape({planes, extent(x).numel()}).gather(1, flat).view(out[0].sizes()));
}

// ---- separable linear maps ----

using TapsFn = std::function<pool::Taps(const Attrs& a, int d, int64_t in, int64_t out)>;

pool::Taps identity_taps() {
  pool::Taps t;
  t.add(0, 1.0);
  t.close();
  return t;
}

// The adjoint's taps: input i reads every output o whose taps hold i, with the same weight.
pool::Taps transposed(const pool::Taps& t, int64_t inputs) {
  std::vector<std::vector<std::pair<int64_t, double>>> by_input(static_cast<size_t>(inputs));
  for (int64_t o = 0; o < t.outputs(); ++o)
    for (int64_t k = t.begin[o]; k < t.begin[o + 1]; ++k)
      by_input[static_cast<size_t>(t.index[k])].emplace_back(o, t.weight[k]);
  pool::Taps r;
  for (const auto& reads : by_input) {
    for (const auto& [o, w] : reads) r.add(o, w);
    r.close();
  }
  return r;
}

struct TapTables {
  V taps;  // see NnKernel::Separable
  std::vector<double> weight;
};

TapTables pack(const std::array<pool::Taps, kDims>& taps) {
  TapTables t;
  int64_t offset = 0;
  for (const pool::Taps& d : taps) {
    for (int64_t b : d.begin) t.taps.push_back(b + offset);
    offset += static_cast<int64_t>(d.index.size());
  }
  for (const pool::Taps& d : taps) {
    t.taps.insert(t.taps.end(), d.index.begin(), d.index.end());
    t.weight.insert(t.weight.end(), d.weight.begin(), d.weight.end());
  }
  return t;
}

// The forward entry (adjoint false: input -> output) or its _backward (grad -> input sizes).
KernelFn separable_kernel(std::string name, int spatial, TapsFn taps, bool adjoint) {
  if (adjoint) name += "_backward";
  return [name, spatial, taps, adjoint](const std::vector<Tensor>& in, std::vector<Tensor>& out,
                                        const Attrs& a) {
    const OpDef& op = get_op(name);
    if (!takes(in, out) || out[0].numel() == 0 || in[0].numel() == 0)
      return cpu_fallback(op, in, out, a);
    NoGradGuard no_grad;
    const Tensor x = in[0].contiguous();
    const ScalarType dt = x.dtype();
    const Extent src = extent(x), dst = extent(out[0]);
    // The forward map's input and output sides.
    const Extent& fin = adjoint ? dst : src;
    const Extent& fout = adjoint ? src : dst;
    const int skip = kDims - spatial;
    std::array<pool::Taps, kDims> taps_of;
    for (int d = 0; d < kDims; ++d) {
      taps_of[d] = d < skip ? identity_taps() : taps(a, d - skip, fin.size[d], fout.size[d]);
      if (adjoint) taps_of[d] = transposed(taps_of[d], fin.size[d]);
    }
    const TapTables tables = pack(taps_of);
    const Tensor tap_t = upload(tables.taps, kInt64, x),
                 weight_t = upload(tables.weight, kFloat64, x);
    Tensor y = result_like(out[0], dt);
    const void *xp = x.data_ptr(), *tp = tap_t.data_ptr(), *wp = weight_t.data_ptr();
    void* yp = y.data_ptr();
    int64_t planes = pool::planes(x);
    int64_t D = src.size[0], H = src.size[1], W = src.size[2];
    int64_t OD = dst.size[0], OH = dst.size[1], OW = dst.size[2];
    void* params[] = {&xp, &yp, &tp, &wp, &planes, &D, &H, &W, &OD, &OH, &OW};
    launch_over(op, NnKernel::Separable, dt, device_of(x), y.numel(), params);
    store(out[0], y);
  };
}

// The entry and its adjoint from the taps the CPU entries use.
void register_separable(const std::string& name) {
  const pool::SeparableDef& def = pool::separable_def(name);
  set_kernel(name, kCUDA, separable_kernel(name, def.spatial, def.taps, false));
  set_kernel(name + "_backward", kCUDA, separable_kernel(name, def.spatial, def.taps, true));
}

}  // namespace

std::string nn_source(NnKernel kind, ScalarType dtype, const std::string& name) {
  KILN_CHECK(is_floating_point(dtype), "cuda: no ", kind_name(kind), " kernel for ", dtype);
  const std::string assert_source =
      kind == NnKernel::MaxPoolBackward ? std::string(kDeviceAssertSource) : std::string();
  return kernel_source(assert_source + "using T = " + compiler::storage_type(dtype) +
                           ";\nusing Acc = " + compiler::storage_type(float_accumulator(dtype)) +
                           ";\n" + kLoop,
                       body_of(kind), name);
}

void register_nn_kernels() {
  set_kernel("batch_norm", kCUDA, batch_norm);
  set_kernel("group_norm", kCUDA, group_norm);
  set_kernel("max_pool2d_with_indices", kCUDA, max_pool_kernel(2));
  set_kernel("max_pool3d_with_indices", kCUDA, max_pool_kernel(3));
  set_kernel("adaptive_max_pool2d", kCUDA, adaptive_max_pool_kernel(2));
  set_kernel("adaptive_max_pool3d", kCUDA, adaptive_max_pool_kernel(3));
  set_kernel("max_pool_backward", kCUDA, max_pool_backward);
  set_kernel("max_pool_gather", kCUDA, max_pool_gather);
  register_separable("avg_pool2d");
  register_separable("avg_pool3d");
  register_separable("adaptive_avg_pool2d");
  register_separable("adaptive_avg_pool3d");
  register_separable("upsample_nearest2d");
  register_separable("upsample_bilinear2d");
}

}  // namespace kiln::cuda
