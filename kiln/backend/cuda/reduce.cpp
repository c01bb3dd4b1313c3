#include "kiln/backend/cuda/reduce.h"

#include <algorithm>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "kiln/backend/cuda/device_assert.h"
#include "kiln/backend/cuda/generated_kernels.h"
#include "kiln/backend/cuda/nvrtc_program.h"
#include "kiln/backend/cuda/op_util.h"
#include "kiln/backend/cuda/pointwise_kernel.h"
#include "kiln/backend/cuda/runtime.h"
#include "kiln/compile/codegen/c_types.h"
#include "kiln/core/error.h"
#include "kiln/core/grad_mode.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/registry.h"

namespace kiln::cuda {
namespace {

using compiler::storage_type;

// ---- Sources ----

bool is_float(ScalarType t) {
  return t == kFloat64 || t == kFloat32 || t == kFloat16 || t == kBFloat16;
}

bool is_known(ScalarType t) {
  return t != ScalarType::Undefined && static_cast<int>(t) >= 0 &&
         static_cast<int>(t) < kNumScalarTypes;
}

const char* kind_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::Sum:
      return "sum";
    case ReduceKind::Mean:
      return "mean";
    case ReduceKind::Max:
      return "max";
    case ReduceKind::Min:
      return "min";
    case ReduceKind::Softmax:
      return "softmax";
    case ReduceKind::LogSoftmax:
      return "log_softmax";
  }
  return "";
}

bool is_softmax(ReduceKind k) { return k == ReduceKind::Softmax || k == ReduceKind::LogSoftmax; }

// What every kernel uses: In, Out and Acc are defined before it. Max and Min let NaN win, as the
// CPU kernels do. group_all leaves the result in every lane of an aligned group of `group` lanes;
// the caller keeps whole warps in step, since the shuffles name every lane of the warp.
constexpr const char* kCommon = R"(
constexpr unsigned kFullMask = 0xffffffffu;

__device__ inline Acc load(In v) { return static_cast<Acc>(v); }
__device__ inline float ex(float v) { return ::expf(v); }
__device__ inline double ex(double v) { return ::exp(v); }
__device__ inline float lg(float v) { return ::logf(v); }
__device__ inline double lg(double v) { return ::log(v); }

struct Sum {
  static __device__ Acc identity() { return Acc(0); }
  __device__ Acc operator()(Acc a, Acc v) const { return a + v; }
};
struct Max {
  static __device__ Acc identity() {
    using L = std::numeric_limits<Acc>;
    return L::has_infinity ? -L::infinity() : L::lowest();
  }
  __device__ Acc operator()(Acc a, Acc v) const { return v != v ? v : (v > a ? v : a); }
};
struct Min {
  static __device__ Acc identity() {
    using L = std::numeric_limits<Acc>;
    return L::has_infinity ? L::infinity() : L::max();
  }
  __device__ Acc operator()(Acc a, Acc v) const { return v != v ? v : (v < a ? v : a); }
};

template <class F>
__device__ Acc group_all(Acc v, int group, F f) {
  for (int off = group / 2; off > 0; off /= 2) v = f(v, __shfl_xor_sync(kFullMask, v, off));
  return v;
}

// Over the whole block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
template <class F>
__device__ Acc block_all(Acc v, Acc* shared, F f) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = group_all(v, 32, f);
  __syncthreads();  // readers of the previous call are done with `shared`
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : F::identity();
  return group_all(v, 32, f);
}

// a folded with map(p[i]) for i = begin, begin + step, ... < end, in that order; four loads are
// issued before their folds so that several are in flight.
template <class F, class M>
__device__ Acc fold(const In* p, int64_t i, int64_t end, int64_t step, Acc a, F f, M map) {
  for (; i + 3 * step < end; i += 4 * step) {
    const Acc v0 = load(p[i]), v1 = load(p[i + step]), v2 = load(p[i + 2 * step]),
              v3 = load(p[i + 3 * step]);
    a = f(f(f(f(a, map(v0)), map(v1)), map(v2)), map(v3));
  }
  for (; i < end; i += step) a = f(a, map(load(p[i])));
  return a;
}
)";

constexpr const char* kReduceKernel = R"(
extern "C" __global__ void KERNEL(const In* x, Out* y, int64_t rows, int64_t len, int64_t splits,
                                  int group, double divisor) {
  __shared__ Acc shared[32];
  const Fold f;
  const int64_t n = rows * splits, chunk = (len + splits - 1) / splits;
  auto fold_row = [&](int64_t q, int64_t lane, int64_t lanes) {
    const int64_t r = q / splits, begin = (q - r * splits) * chunk;
    const int64_t end = begin + chunk < len ? begin + chunk : len;
    return fold(x + r * len, begin + lane, end, lanes, Fold::identity(), f, [](Acc v) { return v; });
  };
  auto finish = [&](Acc a) { return static_cast<Out>(FINISH); };
  if (group == 0) {
    for (int64_t q = blockIdx.x; q < n; q += gridDim.x) {
      const Acc a = block_all(fold_row(q, threadIdx.x, blockDim.x), shared, f);
      if (threadIdx.x == 0) y[q] = finish(a);
    }
    return;
  }
  const int64_t per_block = blockDim.x / group, lane = threadIdx.x % group;
  for (int64_t base = blockIdx.x * per_block; base < n; base += gridDim.x * per_block) {
    const int64_t q = base + threadIdx.x / group;
    const Acc a = group_all(q < n ? fold_row(q, lane, group) : Fold::identity(), group, f);
    if (q < n && lane == 0) y[q] = finish(a);
  }
}
)";

constexpr const char* kSoftmaxKernel = R"(
extern "C" __global__ void KERNEL(const In* x, Out* y, int64_t rows, int64_t len, int group) {
  __shared__ Acc shared[32];
  const Max fmax;
  const Sum fsum;
  // Rows past the end (group mode) take part in the shuffles with no elements.
  auto row = [&](int64_t r, int64_t lane, int64_t lanes, auto all) {
    const int64_t end = r < rows ? len : 0;
    const In* p = x + r * len;
    Out* o = y + r * len;
    const Acc m = all(fold(p, lane, end, lanes, Max::identity(), fmax, [](Acc v) { return v; }), fmax);
    const Acc s = all(fold(p, lane, end, lanes, Acc(0), fsum, [m](Acc v) { return ex(v - m); }), fsum);
    WRITE
  };
  if (group == 0) {
    auto all = [&](Acc v, auto f) { return block_all(v, shared, f); };
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) row(r, threadIdx.x, blockDim.x, all);
    return;
  }
  auto all = [group](Acc v, auto f) { return group_all(v, group, f); };
  const int64_t per_block = blockDim.x / group, lane = threadIdx.x % group;
  for (int64_t base = blockIdx.x * per_block; base < rows; base += gridDim.x * per_block)
    row(base + threadIdx.x / group, lane, group, all);
}
)";

constexpr const char* kSoftmaxWrite = R"(const Acc inv = Acc(1) / s;
    for (int64_t i = lane; i < end; i += lanes) o[i] = static_cast<Out>(ex(load(p[i]) - m) * inv);)";
constexpr const char* kLogSoftmaxWrite = R"(const Acc ls = lg(s);
    for (int64_t i = lane; i < end; i += lanes) o[i] = static_cast<Out>((load(p[i]) - m) - ls);)";

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

}  // namespace

ScalarType reduce_accumulator(ScalarType in) {
  if (in == kFloat64) return kFloat64;
  return is_float(in) ? kFloat32 : kInt64;
}

bool reduce_supported(ReduceKind kind, ScalarType in, ScalarType out) {
  if (!is_known(in) || !is_known(out)) return false;
  switch (kind) {
    case ReduceKind::Softmax:
    case ReduceKind::LogSoftmax:
      return in == out && is_float(in);
    case ReduceKind::Mean:
      if (!is_float(in) || !is_float(out)) return false;
      break;
    case ReduceKind::Sum:
      if (in == kBool || out == kBool) return false;
      break;
    case ReduceKind::Max:
    case ReduceKind::Min:
      break;
  }
  // One pass (in == out), or a split row's partial pass (out is the accumulator) or final pass.
  const ScalarType acc = reduce_accumulator(in);
  return in == out || out == acc || (in == acc && reduce_accumulator(out) == acc);
}

std::string reduce_kernel_name(ReduceKind kind, ScalarType in, ScalarType out) {
  return "kiln_reduce_" + std::string(kind_name(kind)) + "_" + std::string(dtype_name(in)) + "_" +
         std::string(dtype_name(out));
}

std::string reduce_source(ReduceKind kind, ScalarType in, ScalarType out, const std::string& name) {
  KILN_CHECK(reduce_supported(kind, in, out), "cuda: no ", kind_name(kind), " kernel from ",
             dtype_name(in), " to ", dtype_name(out));
  std::string kernel = is_softmax(kind) ? kSoftmaxKernel : kReduceKernel;
  replace_all(kernel, "KERNEL", name);
  if (is_softmax(kind)) {
    replace_all(kernel, "WRITE", kind == ReduceKind::Softmax ? kSoftmaxWrite : kLogSoftmaxWrite);
  } else {
    const char* fold = kind == ReduceKind::Max ? "Max" : kind == ReduceKind::Min ? "Min" : "Sum";
    replace_all(kernel, "Fold", fold);
    replace_all(kernel, "FINISH", kind == ReduceKind::Mean ? "static_cast<Acc>(a / divisor)" : "a");
  }
  std::ostringstream os;
  os << "// " << kind_name(kind) << ": " << dtype_name(in) << " -> " << dtype_name(out) << "\n"
     << "#include <cstdint>\n#include <limits>\n\n#include \"kiln/core/half.h\"\n\n"
     << "using In = " << storage_type(in) << ";\n"
     << "using Out = " << storage_type(out) << ";\n"
     << "using Acc = " << storage_type(reduce_accumulator(in)) << ";\n"
     << kCommon << kernel;
  return os.str();
}

namespace {

// ---- Loading and launching ----

constexpr unsigned kBlockThreads = 512;  // one block per row
constexpr unsigned kGroupThreads = 256;  // blockDim.x / group rows per block
constexpr int64_t kGroupMaxLen = 1024;   // longer rows get a block each
constexpr int64_t kMinChunk = 8192;      // the least a block folds of a split row

cudaKernel_t load_kernel(int dev, ReduceKind kind, ScalarType in, ScalarType out) {
  const std::string name = reduce_kernel_name(kind, in, out);
  return generated_kernel(dev, name, [&] { return reduce_source(kind, in, out, name); });
}

// Lanes per row: 1 to 32 for rows of up to kGroupMaxLen elements, else 0 (a block per row).
int group_for(int64_t len) {
  if (len > kGroupMaxLen) return 0;
  int g = 1;
  while (g < 32 && g < len) g *= 2;
  return g;
}

// Enough blocks to fill the device (the kernels stride over the rest), at most one per row.
unsigned grid_for(int64_t rows, int group, int sms) {
  const int64_t blocks =
      group == 0 ? rows : (rows + kGroupThreads / group - 1) / (kGroupThreads / group);
  const int64_t full = int64_t{sms} * (2048 / (group == 0 ? kBlockThreads : kGroupThreads));
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(blocks, full)));
}

void launch(const OpDef& op, cudaKernel_t fn, int64_t rows, int group, int sms, void** params) {
  launch_kernel(op.name, fn, dim3(grid_for(rows, group, sms)),
                dim3(group == 0 ? kBlockThreads : kGroupThreads), params);
}

// y (contiguous, rows elements) = the reduction of x (contiguous [rows, len]), both of dtype dt.
void reduce_rows(const OpDef& op, ReduceKind kind, int dev, const Tensor& x, const Tensor& y,
                 int64_t rows, int64_t len) {
  const ScalarType dt = y.dtype(), acc = reduce_accumulator(dt);
  const int sms = multiprocessors(dev);
  int group = group_for(len);
  const int64_t full = int64_t{sms} * (2048 / kBlockThreads);
  const int64_t splits =
      group == 0 && rows < full ? std::min((full + rows - 1) / rows, len / kMinChunk) : 1;
  const void* src = x.data_ptr();
  void* dst = y.data_ptr();
  double divisor = static_cast<double>(len);
  if (splits <= 1) {
    int64_t one = 1;
    void* params[] = {&src, &dst, &rows, &len, &one, &group, &divisor};
    launch(op, load_kernel(dev, kind, dt, dt), rows, group, sms, params);
    return;
  }
  // Long rows, too few to fill the device: each block folds a chunk of a row into `partial`,
  // then a second launch folds each row's partial results.
  Tensor partial = empty({rows * splits}, TensorOptions().dtype(acc).device(y.device()));
  void* part = partial.data_ptr();
  const ReduceKind first = kind == ReduceKind::Mean ? ReduceKind::Sum : kind;
  int64_t s = splits, one = 1;
  int block = 0;
  double unit = 1;
  void* params1[] = {&src, &part, &rows, &len, &s, &block, &unit};
  launch(op, load_kernel(dev, first, dt, acc), rows * splits, 0, sms, params1);
  const void* part_in = part;
  int group2 = group_for(splits);
  void* params2[] = {&part_in, &dst, &rows, &s, &one, &group2, &divisor};
  launch(op, load_kernel(dev, kind, acc, dt), rows, group2, sms, params2);
}

// y = src on the device, by the pointwise kernel of clone (copy_ has no CUDA kernel and would
// take the CPU fallback).
void copy_into(const Tensor& y, const Tensor& src) {
  static const OpDef& clone = get_op("clone");
  std::vector<Tensor> outs{y};
  if (!run_pointwise(clone, {src}, outs, {})) y.copy_(src);
}

// Empty inputs keep the CPU's results and messages; other dtypes have no kernel here.
bool runs_natively(ReduceKind kind, const Tensor& self, const Tensor& y) {
  return self.is_cuda() && y.is_cuda() && self.numel() > 0 &&
         reduce_supported(kind, y.dtype(), y.dtype());
}

// sum, mean (attrs: dims, keepdim, dtype), amax, amin (dims, keepdim) and, without attrs, max
// and min of every element.
KernelFn reduce_kernel(const OpDef& op, ReduceKind kind, bool has_dims) {
  const OpDef* p = &op;
  return [p, kind, has_dims](const std::vector<Tensor>& in, std::vector<Tensor>& out,
                             const Attrs& attrs) {
    const Tensor& self = in[0];
    const Tensor& y = out[0];
    const ScalarType dt = y.dtype();
    if (!runs_natively(kind, self, y)) return cpu_fallback(*p, in, out, attrs);
    const int64_t nd = self.dim();
    const std::vector<int64_t> listed = has_dims ? attrs.ints(0) : std::vector<int64_t>{};
    std::vector<bool> reduced(nd, listed.empty());
    for (int64_t d : listed)
      if (nd > 0) reduced[d < 0 ? d + nd : d] = true;
    std::vector<int64_t> perm;
    int64_t rows = 1, len = 1;
    for (bool second : {false, true}) {
      for (int64_t d = 0; d < nd; ++d) {
        if (reduced[d] != second) continue;
        perm.push_back(d);
        (second ? len : rows) *= self.size(d);
      }
    }

    const int dev = device_of(y);
    NoGradGuard no_grad;
    Tensor x = self.detach();
    if (x.dtype() != dt) x = x.to(dt);  // as the CPU kernel: convert, then reduce
    x = x.permute(perm).contiguous();
    const bool direct = y.is_contiguous();
    Tensor dst = direct ? y : empty(y.sizes(), TensorOptions().dtype(dt).device(y.device()));
    reduce_rows(*p, kind, dev, x, dst, rows, len);
    if (!direct) copy_into(y, dst);
  };
}

// softmax, log_softmax (attrs: dim, dtype).
KernelFn softmax_kernel(const OpDef& op, ReduceKind kind) {
  const OpDef* p = &op;
  return [p, kind](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& attrs) {
    const Tensor& self = in[0];
    const Tensor& y = out[0];
    const ScalarType dt = y.dtype();
    if (!runs_natively(kind, self, y)) return cpu_fallback(*p, in, out, attrs);
    const int64_t nd = self.dim();
    const int64_t dim = nd == 0 ? 0 : (attrs.i(0) < 0 ? attrs.i(0) + nd : attrs.i(0));
    std::vector<int64_t> perm, inverse(nd);
    for (int64_t d = 0; d < nd; ++d)
      if (d != dim) perm.push_back(d);
    if (nd > 0) perm.push_back(dim);
    for (int64_t d = 0; d < nd; ++d) inverse[perm[d]] = d;
    const int64_t len = nd == 0 ? 1 : self.size(dim), rows = self.numel() / len;

    const int dev = device_of(y);
    NoGradGuard no_grad;
    Tensor x = self.detach();
    if (x.dtype() != dt) x = x.to(dt);
    x = x.permute(perm).contiguous();
    const bool moved = nd > 0 && dim != nd - 1;
    const bool direct = !moved && y.is_contiguous();
    Tensor dst = direct ? y : empty(x.sizes(), TensorOptions().dtype(dt).device(y.device()));
    const int sms = multiprocessors(dev);
    int group = group_for(len);
    const void* src = x.data_ptr();
    void* dst_data = dst.data_ptr();
    int64_t r = rows, n = len;
    void* params[] = {&src, &dst_data, &r, &n, &group};
    launch(*p, load_kernel(dev, kind, dt, dt), rows, group, sms, params);
    if (!direct) copy_into(y, dst.permute(inverse));
  };
}

}  // namespace

void register_reduce_kernels() {
  const struct {
    const char* op;
    ReduceKind kind;
    bool has_dims;
  } ops[] = {{"sum", ReduceKind::Sum, true},         {"mean", ReduceKind::Mean, true},
             {"amax", ReduceKind::Max, true},        {"amin", ReduceKind::Min, true},
             {"max", ReduceKind::Max, false},        {"min", ReduceKind::Min, false},
             {"softmax", ReduceKind::Softmax, true}, {"log_softmax", ReduceKind::LogSoftmax, true}};
  for (const auto& o : ops) {
    const OpDef& op = get_op(o.op);
    set_kernel(
        o.op, kCUDA,
        is_softmax(o.kind) ? softmax_kernel(op, o.kind) : reduce_kernel(op, o.kind, o.has_dims));
  }
}

}  // namespace kiln::cuda
