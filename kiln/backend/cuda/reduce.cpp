#include "kiln/backend/cuda/reduce.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>
#include <vector>

#include "kiln/backend/cuda/device_assert.h"
#include "kiln/backend/cuda/generated_kernels.h"
#include "kiln/backend/cuda/op_util.h"
#include "kiln/backend/cuda/pointwise_kernel.h"
#include "kiln/compile/codegen/c_types.h"
#include "kiln/core/error.h"
#include "kiln/core/grad_mode.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/registry.h"

namespace kiln::cuda {

// Max and Min let NaN win, as the CPU kernels do. group_all leaves the result in every lane of an
// aligned group of `group` lanes; the caller keeps whole warps in step, since the shuffles name
// every lane of the warp.
const char* const kReduceDeviceSource = R"(
constexpr unsigned kFullMask = 0xffffffffu;

__device__ inline Acc load(In v) { return static_cast<Acc>(v); }
__device__ inline float ex(float v) { return ::expf(v); }
__device__ inline double ex(double v) { return ::exp(v); }
__device__ inline float lg(float v) { return ::logf(v); }
__device__ inline double lg(double v) { return ::log(v); }

template <class T>
__device__ inline T shfl_xor(T v, int offset) {
  return __shfl_xor_sync(kFullMask, v, offset);
}

struct Sum {
  static __device__ Acc identity() { return Acc(0); }
  __device__ Acc operator()(Acc a, Acc v) const { return a + v; }
};
struct Prod {
  static __device__ Acc identity() { return Acc(1); }
  __device__ Acc operator()(Acc a, Acc v) const { return a * v; }
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

template <class T, class F>
__device__ T group_all(T v, int group, F f) {
  for (int off = group / 2; off > 0; off /= 2) v = f(v, shfl_xor(v, off));
  return v;
}

// Over the whole block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
template <class T, class F>
__device__ T block_all(T v, T* shared, F f) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = group_all(v, 32, f);
  __syncthreads();  // readers of the previous call are done with `shared`
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : F::identity();
  return group_all(v, 32, f);
}

// a folded with map(p[i], i) for i = begin, begin + step, ... < end, in that order; four loads
// are issued before their folds so that several are in flight.
template <class A, class F, class M>
__device__ A fold(const In* p, int64_t i, int64_t end, int64_t step, A a, F f, M map) {
  for (; i + 3 * step < end; i += 4 * step) {
    const In v0 = p[i], v1 = p[i + step], v2 = p[i + 2 * step], v3 = p[i + 3 * step];
    a = f(f(f(f(a, map(v0, i)), map(v1, i + step)), map(v2, i + 2 * step)), map(v3, i + 3 * step));
  }
  for (; i < end; i += step) a = f(a, map(p[i], i));
  return a;
}
)";

namespace {

using compiler::compute_type;
using compiler::storage_type;

// ---- Sources ----

const char* kind_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::Sum:
      return "sum";
    case ReduceKind::Mean:
      return "mean";
    case ReduceKind::Prod:
      return "prod";
    case ReduceKind::Max:
      return "max";
    case ReduceKind::Min:
      return "min";
    case ReduceKind::All:
      return "all";
    case ReduceKind::Any:
      return "any";
    case ReduceKind::CountNonzero:
      return "count_nonzero";
    case ReduceKind::NormZero:
      return "norm0";
    case ReduceKind::NormOne:
      return "norm1";
    case ReduceKind::NormTwo:
      return "norm2";
    case ReduceKind::NormInf:
      return "norm_inf";
    case ReduceKind::NormNegInf:
      return "norm_neg_inf";
    case ReduceKind::NormP:
      return "norm_p";
    case ReduceKind::Softmax:
      return "softmax";
    case ReduceKind::LogSoftmax:
      return "log_softmax";
    case ReduceKind::LogSumExp:
      return "logsumexp";
    case ReduceKind::Var:
      return "var";
    case ReduceKind::Std:
      return "std";
  }
  return "";
}

// A fold: its operation (a struct of the device source), the accumulator of element `v` (In)
// and the output of the folded `a` (Acc, with the kernel's `scalar`).
struct FoldSpec {
  const char* fold;
  const char* map;
  const char* finish;
};

FoldSpec fold_spec(ReduceKind k) {
  switch (k) {
    case ReduceKind::Sum:
      return {"Sum", "load(v)", "a"};
    case ReduceKind::Mean:
      return {"Sum", "load(v)", "a / scalar"};
    case ReduceKind::Prod:
      return {"Prod", "load(v)", "a"};
    case ReduceKind::Max:
      return {"Max", "load(v)", "a"};
    case ReduceKind::Min:
      return {"Min", "load(v)", "a"};
    case ReduceKind::All:
      return {"And", "nonzero(v)", "a"};
    case ReduceKind::Any:
      return {"Or", "nonzero(v)", "a"};
    case ReduceKind::CountNonzero:
    case ReduceKind::NormZero:
      return {"Sum", "Acc(nonzero(v))", "a"};
    case ReduceKind::NormOne:
      return {"Sum", "magnitude(load(v))", "a"};
    case ReduceKind::NormTwo:
      return {"Sum", "load(v) * load(v)", "::sqrt(static_cast<double>(a))"};
    case ReduceKind::NormInf:
      return {"Max", "magnitude(load(v))", "a"};
    case ReduceKind::NormNegInf:
      return {"Min", "magnitude(load(v))", "a"};
    case ReduceKind::NormP:
      return {"Sum", "static_cast<Acc>(::pow(magnitude(load(v)), static_cast<Acc>(scalar)))",
              "::pow(static_cast<double>(a), 1.0 / scalar)"};
    default:
      KILN_FAIL("cuda: internal error: ", kind_name(k), " is not a fold");
  }
}

// What fold kernels add to the device source: truth, magnitude, the logical folds.
constexpr const char* kFoldHelpers = R"(
__device__ inline bool nonzero(In v) { return static_cast<Compute>(v) != Compute(0); }
template <class T>
__device__ inline T magnitude(T v) { return v < T(0) ? -v : v; }
__device__ inline float magnitude(float v) { return ::fabsf(v); }
__device__ inline double magnitude(double v) { return ::fabs(v); }

struct And {
  static __device__ Acc identity() { return Acc(1); }
  __device__ Acc operator()(Acc a, Acc v) const { return a && v; }
};
struct Or {
  static __device__ Acc identity() { return Acc(0); }
  __device__ Acc operator()(Acc a, Acc v) const { return a || v; }
};

struct Map {
  double scalar;
  __device__ Acc operator()(In v, int64_t) const { return MAP; }
};
)";

constexpr const char* kFoldKernel = R"(
extern "C" __global__ void KERNEL(const In* x, Out* y, int64_t rows, int64_t len, int64_t splits,
                                  int group, double scalar) {
  __shared__ Acc shared[32];
  const Fold f;
  const Map map{scalar};
  const int64_t n = rows * splits, chunk = (len + splits - 1) / splits;
  auto fold_row = [&](int64_t q, int64_t lane, int64_t lanes) {
    const int64_t r = q / splits, begin = (q - r * splits) * chunk;
    const int64_t end = begin + chunk < len ? begin + chunk : len;
    return fold(x + r * len, begin + lane, end, lanes, Fold::identity(), f, map);
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

// Rows past the end (group mode) take part in the shuffles with no elements.
constexpr const char* kRowKernel = R"(
extern "C" __global__ void KERNEL(const In* x, Out* y, Out* mean, int64_t rows, int64_t len,
                                  int group, double scalar) {
  __shared__ Acc shared[32];
  auto row = [&](int64_t r, int64_t lane, int64_t lanes, auto all) {
    const int64_t end = r < rows ? len : 0;
    const In* p = x + r * len;
    ROW
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

// The row's max m and sum s of exp(x - m).
constexpr const char* kExpSums =
    R"(const Acc m = all(fold(p, lane, end, lanes, Max::identity(), Max(), [](In v, int64_t) { return load(v); }), Max());
    const Acc s = all(fold(p, lane, end, lanes, Acc(0), Sum(), [m](In v, int64_t) { return ex(load(v) - m); }), Sum());
    )";
constexpr const char* kSoftmaxWrite = R"(Out* o = y + r * len;
    const Acc inv = Acc(1) / s;
    for (int64_t i = lane; i < end; i += lanes) o[i] = static_cast<Out>(ex(load(p[i]) - m) * inv);)";
constexpr const char* kLogSoftmaxWrite = R"(Out* o = y + r * len;
    const Acc ls = lg(s);
    for (int64_t i = lane; i < end; i += lanes) o[i] = static_cast<Out>((load(p[i]) - m) - ls);)";
// +-inf and NaN maxima decide the result alone, as on the CPU.
constexpr const char* kLogSumExpWrite =
    R"(if (r < rows && lane == 0) y[r] = static_cast<Out>(::isfinite(m) ? m + lg(s) : m);)";
// The mean, then the squared deviations from it (Acc is double).
constexpr const char* kVarRow = R"(const Acc n = static_cast<Acc>(len);
    const Acc mu = all(fold(p, lane, end, lanes, Acc(0), Sum(), [](In v, int64_t) { return load(v); }), Sum()) / n;
    const Acc m2 = all(fold(p, lane, end, lanes, Acc(0), Sum(), [mu](In v, int64_t) {
      const Acc d = load(v) - mu;
      return d * d;
    }), Sum());
    if (r < rows && lane == 0) {
      const Acc var = m2 / (n - scalar > 0 ? n - scalar : Acc(0));
      y[r] = static_cast<Out>(RESULT);
      if (mean) mean[r] = static_cast<Out>(mu);
    })";

std::string row_body(ReduceKind kind) {
  const std::string sums = kExpSums;
  switch (kind) {
    case ReduceKind::Softmax:
      return sums + kSoftmaxWrite;
    case ReduceKind::LogSoftmax:
      return sums + kLogSoftmaxWrite;
    case ReduceKind::LogSumExp:
      return sums + kLogSumExpWrite;
    case ReduceKind::Var:
    case ReduceKind::Std: {
      std::string body = kVarRow;
      const size_t at = body.find("RESULT");
      body.replace(at, 6, kind == ReduceKind::Std ? "::sqrt(var)" : "var");
      return body;
    }
    default:
      KILN_FAIL("cuda: internal error: ", kind_name(kind), " is not a row reduction");
  }
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

// A mean's partial pass is a sum's.
ReduceKind pass_kind(ReduceKind kind, ReducePass pass) {
  return pass == ReducePass::Partial && kind == ReduceKind::Mean ? ReduceKind::Sum : kind;
}

const char* pass_suffix(ReducePass pass) {
  switch (pass) {
    case ReducePass::Whole:
      return "";
    case ReducePass::Partial:
      return "_partial";
    case ReducePass::Final:
      return "_final";
  }
  return "";
}

bool pass_supported(ReduceKind kind, ReducePass pass, ScalarType in, ScalarType out) {
  if (pass == ReducePass::Whole) return reduce_supported(kind, in, out);
  if (is_row_kind(kind) || !is_known_dtype(in) || !is_known_dtype(out)) return false;
  return pass == ReducePass::Final || out == reduce_accumulator(kind, in);
}

}  // namespace

bool is_row_kind(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::Softmax:
    case ReduceKind::LogSoftmax:
    case ReduceKind::LogSumExp:
    case ReduceKind::Var:
    case ReduceKind::Std:
      return true;
    default:
      return false;
  }
}

ScalarType reduce_accumulator(ReduceKind kind, ScalarType in) {
  if (kind == ReduceKind::All || kind == ReduceKind::Any) return kBool;
  if (kind == ReduceKind::CountNonzero || !is_floating_point(in)) return kInt64;
  const bool wide = kind == ReduceKind::Prod || kind == ReduceKind::Var || kind == ReduceKind::Std;
  return in == kFloat64 || wide ? kFloat64 : kFloat32;
}

bool reduce_supported(ReduceKind kind, ScalarType in, ScalarType out) {
  if (!is_known_dtype(in) || !is_known_dtype(out)) return false;
  switch (kind) {
    case ReduceKind::All:
    case ReduceKind::Any:
      return out == kBool || out == kUInt8;
    case ReduceKind::CountNonzero:
      return out == kInt64;
    case ReduceKind::Sum:
    case ReduceKind::Prod:
      return in == out && in != kBool;
    case ReduceKind::Max:
    case ReduceKind::Min:
      return in == out;
    default:  // mean, the norms and the row kinds
      return in == out && is_floating_point(in);
  }
}

std::string reduce_kernel_name(ReduceKind kind, ReducePass pass, ScalarType in, ScalarType out) {
  return "kiln_reduce_" + std::string(kind_name(pass_kind(kind, pass))) + "_" +
         std::string(dtype_name(in)) + "_" + std::string(dtype_name(out)) + pass_suffix(pass);
}

std::string reduce_source(ReduceKind kind, ReducePass pass, ScalarType in, ScalarType out,
                          const std::string& name) {
  KILN_CHECK(pass_supported(kind, pass, in, out), "cuda: no ", kind_name(kind), " kernel",
             pass_suffix(pass), " from ", dtype_name(in), " to ", dtype_name(out));
  kind = pass_kind(kind, pass);
  const ScalarType acc = pass == ReducePass::Final ? in : reduce_accumulator(kind, in);
  std::string kernel;
  if (is_row_kind(kind)) {
    kernel = kRowKernel;
    replace_all(kernel, "ROW", row_body(kind));
  } else {
    const FoldSpec spec = fold_spec(kind);
    kernel = std::string(kFoldHelpers) + kFoldKernel;
    replace_all(kernel, "Fold", spec.fold);
    replace_all(kernel, "MAP", pass == ReducePass::Final ? "load(v)" : spec.map);
    replace_all(kernel, "FINISH", pass == ReducePass::Partial ? "a" : spec.finish);
  }
  replace_all(kernel, "KERNEL", name);
  std::ostringstream os;
  os << "// " << kind_name(kind) << pass_suffix(pass) << ": " << dtype_name(in) << " -> "
     << dtype_name(out) << "\n"
     << "#include <cstdint>\n#include <limits>\n\n#include \"kiln/core/half.h\"\n\n"
     << "using In = " << storage_type(in) << ";\n"
     << "using Compute = " << compute_type(in) << ";\n"
     << "using Out = " << storage_type(out) << ";\n"
     << "using Acc = " << storage_type(acc) << ";\n"
     << kReduceDeviceSource << kernel;
  return os.str();
}

// ---- Layouts and launches ----

namespace {

constexpr unsigned kBlockThreads = 512;  // one block per row
constexpr unsigned kGroupThreads = 256;  // blockDim.x / group rows per block
constexpr int64_t kGroupMaxLen = 1024;   // longer rows get a block each
constexpr int64_t kMinChunk = 8192;      // the least a block folds of a split row

// Enough blocks to fill the device (the kernels stride over the rest), at most one per row.
unsigned grid_for(int64_t rows, int group, int sms) {
  const int64_t per_block = group == 0 ? 1 : kGroupThreads / group;
  const int64_t blocks = (rows + per_block - 1) / per_block;
  const int64_t full = int64_t{sms} * (2048 / row_block_threads(group));
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(blocks, full)));
}

}  // namespace

RowLayout rows_last(const Tensor& self, const std::vector<bool>& last, ScalarType dt) {
  RowLayout l{Tensor(), {}, 1, 1};
  for (bool second : {false, true}) {
    for (int64_t d = 0; d < self.dim(); ++d) {
      if (last[d] != second) continue;
      l.perm.push_back(d);
      (second ? l.len : l.rows) *= self.size(d);
    }
  }
  NoGradGuard no_grad;
  Tensor x = self.detach();
  if (x.dtype() != dt) x = x.to(dt);  // as the CPU kernels: convert, then reduce
  l.x = x.permute(l.perm).contiguous();
  return l;
}

std::vector<bool> dims_mask(int64_t nd, const std::vector<int64_t>& dims) {
  std::vector<bool> mask(nd, dims.empty());
  for (int64_t d : dims)
    if (nd > 0) mask[d < 0 ? d + nd : d] = true;
  return mask;
}

int row_group(int64_t len) {
  if (len > kGroupMaxLen) return 0;
  int g = 1;
  while (g < 32 && g < len) g *= 2;
  return g;
}

unsigned row_block_threads(int group) { return group == 0 ? kBlockThreads : kGroupThreads; }

void launch_rows(const OpDef& op, cudaKernel_t fn, int64_t rows, int group, int dev,
                 void** params) {
  launch_kernel(op.name, fn, dim3(grid_for(rows, group, multiprocessors(dev))),
                dim3(row_block_threads(group)), params);
}

// y = src on the device, by the pointwise kernel of clone (copy_ has no CUDA kernel and would
// take the CPU fallback).
void copy_into(const Tensor& y, const Tensor& src) {
  static const OpDef& clone = get_op("clone");
  std::vector<Tensor> outs{y};
  if (!run_pointwise(clone, {src}, outs, {})) y.copy_(src);
}

Tensor contiguous_target(const Tensor& y) {
  return y.is_contiguous() ? y : empty(y.sizes(), y.options());
}

namespace {

cudaKernel_t load_kernel(int dev, ReduceKind kind, ReducePass pass, ScalarType in, ScalarType out) {
  const std::string name = reduce_kernel_name(kind, pass, in, out);
  return generated_kernel(dev, name, [&] { return reduce_source(kind, pass, in, out, name); });
}

// y (contiguous, rows elements) = the fold of x (contiguous [rows, len]).
void fold_rows(const OpDef& op, ReduceKind kind, int dev, const Tensor& x, const Tensor& y,
               int64_t rows, int64_t len, double scalar) {
  const ScalarType in = x.dtype(), out = y.dtype(), acc = reduce_accumulator(kind, in);
  int group = row_group(len);
  const int64_t full = int64_t{multiprocessors(dev)} * (2048 / kBlockThreads);
  const int64_t splits =
      group == 0 && rows < full ? std::min((full + rows - 1) / rows, len / kMinChunk) : 1;
  const void* src = x.data_ptr();
  void* dst = y.data_ptr();
  if (splits <= 1) {
    int64_t one = 1;
    void* params[] = {&src, &dst, &rows, &len, &one, &group, &scalar};
    launch_rows(op, load_kernel(dev, kind, ReducePass::Whole, in, out), rows, group, dev, params);
    return;
  }
  // Long rows, too few to fill the device: each block folds a chunk of a row into `partial`,
  // then a second launch folds each row's partial results.
  Tensor partial = empty({rows * splits}, y.options().dtype(acc));
  void* part = partial.data_ptr();
  int64_t s = splits, one = 1;
  int block = 0;
  void* params1[] = {&src, &part, &rows, &len, &s, &block, &scalar};
  launch_rows(op, load_kernel(dev, kind, ReducePass::Partial, in, acc), rows * splits, 0, dev,
              params1);
  const void* part_in = part;
  int group2 = row_group(splits);
  void* params2[] = {&part_in, &dst, &rows, &s, &one, &group2, &scalar};
  launch_rows(op, load_kernel(dev, kind, ReducePass::Final, acc, out), rows, group2, dev, params2);
}

// y (and mean, when defined), contiguous, from the row kernel of `kind` over l.
void run_rows(const OpDef& op, ReduceKind kind, const RowLayout& l, const Tensor& y,
              const Tensor& mean, double scalar) {
  const int dev = device_of(y);
  const ScalarType dt = y.dtype();
  int group = row_group(l.len);
  const void* src = l.x.data_ptr();
  void* dst = y.data_ptr();
  void* mean_dst = mean.defined() ? mean.data_ptr() : nullptr;
  int64_t rows = l.rows, len = l.len;
  void* params[] = {&src, &dst, &mean_dst, &rows, &len, &group, &scalar};
  launch_rows(op, load_kernel(dev, kind, ReducePass::Whole, dt, dt), rows, group, dev, params);
}

// Empty inputs keep the CPU's results and messages; other dtypes have no kernel here.
bool runs_natively(ReduceKind kind, const Tensor& self, const std::vector<Tensor>& out,
                   ScalarType in) {
  return on_device({self}, device_of(out[0])) && on_device(out, device_of(out[0])) &&
         self.numel() > 0 && reduce_supported(kind, in, out[0].dtype());
}

// The kernel's input dtype: folds of truth read the input as it is, the others convert it to
// the output's dtype first, as the CPU kernels do.
ScalarType fold_input(ReduceKind kind, const Tensor& self, const Tensor& y) {
  const bool truth =
      kind == ReduceKind::All || kind == ReduceKind::Any || kind == ReduceKind::CountNonzero;
  return truth ? self.dtype() : y.dtype();
}

// What a call folds: the kind, its scalar and the dims (empty: all of them).
struct FoldCall {
  ReduceKind kind;
  double scalar;
  std::vector<int64_t> dims;
};
using FoldCallOf = std::function<FoldCall(const Attrs&)>;

KernelFn fold_kernel(const OpDef& op, FoldCallOf call_of) {
  const OpDef* p = &op;
  return [p, call_of](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& attrs) {
    const Tensor& self = in[0];
    const FoldCall c = call_of(attrs);
    const ScalarType dt = fold_input(c.kind, self, out[0]);
    if (!runs_natively(c.kind, self, out, dt)) return cpu_fallback(*p, in, out, attrs);
    const RowLayout l = rows_last(self, dims_mask(self.dim(), c.dims), dt);
    const Tensor y = contiguous_target(out[0]);
    const double scalar = c.kind == ReduceKind::Mean ? static_cast<double>(l.len) : c.scalar;
    fold_rows(*p, c.kind, device_of(y), l.x, y, l.rows, l.len, scalar);
    if (!y.is_same(out[0])) copy_into(out[0], y);
  };
}

FoldCallOf over_listed_dims(ReduceKind kind) {
  return [kind](const Attrs& a) { return FoldCall{kind, 0, a.ints(0)}; };
}

FoldCallOf over_all_dims(ReduceKind kind) {
  return [kind](const Attrs&) { return FoldCall{kind, 0, {}}; };
}

// norm (attrs: p, dims, keepdim, dtype).
FoldCall norm_call(const Attrs& a) {
  const double p = a.f(0);
  ReduceKind kind = ReduceKind::NormP;
  if (p == 0) kind = ReduceKind::NormZero;
  if (p == 1) kind = ReduceKind::NormOne;
  if (p == 2) kind = ReduceKind::NormTwo;
  if (p == INFINITY) kind = ReduceKind::NormInf;
  if (p == -INFINITY) kind = ReduceKind::NormNegInf;
  return {kind, p, a.ints(1)};
}

// softmax, log_softmax (attrs: dim, dtype).
KernelFn softmax_kernel(const OpDef& op, ReduceKind kind) {
  const OpDef* p = &op;
  return [p, kind](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& attrs) {
    const Tensor& self = in[0];
    const Tensor& y = out[0];
    if (!runs_natively(kind, self, out, y.dtype())) return cpu_fallback(*p, in, out, attrs);
    const int64_t nd = self.dim();
    const int64_t dim = nd == 0 ? 0 : (attrs.i(0) < 0 ? attrs.i(0) + nd : attrs.i(0));
    std::vector<bool> last(nd, false);
    if (nd > 0) last[dim] = true;
    const RowLayout l = rows_last(self, last, y.dtype());
    const bool moved = nd > 0 && dim != nd - 1;
    const Tensor dst = moved ? empty(l.x.sizes(), y.options()) : contiguous_target(y);
    run_rows(*p, kind, l, dst, Tensor(), 0);
    if (!dst.is_same(y)) copy_into(y, moved ? dst.movedim({nd - 1}, {dim}) : dst);
  };
}

// logsumexp (attrs: dims, keepdim) and var, std, var_mean, std_mean (dims, correction, keepdim;
// the mean is the second output).
KernelFn row_reduce_kernel(const OpDef& op, ReduceKind kind) {
  const OpDef* p = &op;
  return [p, kind](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& attrs) {
    const Tensor& self = in[0];
    if (!runs_natively(kind, self, out, out[0].dtype())) return cpu_fallback(*p, in, out, attrs);
    const bool has_correction = kind == ReduceKind::Var || kind == ReduceKind::Std;
    const RowLayout l = rows_last(self, dims_mask(self.dim(), attrs.ints(0)), out[0].dtype());
    const Tensor y = contiguous_target(out[0]);
    const Tensor mean = out.size() > 1 ? contiguous_target(out[1]) : Tensor();
    run_rows(*p, kind, l, y, mean, has_correction ? attrs.f(1) : 0);
    if (!y.is_same(out[0])) copy_into(out[0], y);
    if (mean.defined() && !mean.is_same(out[1])) copy_into(out[1], mean);
  };
}

}  // namespace

void register_reduce_kernels() {
  const std::pair<const char*, FoldCallOf> folds[] = {
      {"sum", over_listed_dims(ReduceKind::Sum)},
      {"mean", over_listed_dims(ReduceKind::Mean)},
      {"prod", over_listed_dims(ReduceKind::Prod)},
      {"amax", over_listed_dims(ReduceKind::Max)},
      {"amin", over_listed_dims(ReduceKind::Min)},
      {"max", over_all_dims(ReduceKind::Max)},
      {"min", over_all_dims(ReduceKind::Min)},
      {"all", over_listed_dims(ReduceKind::All)},
      {"any", over_listed_dims(ReduceKind::Any)},
      {"count_nonzero", over_listed_dims(ReduceKind::CountNonzero)},
      {"norm", norm_call},
  };
  for (const auto& [name, call_of] : folds)
    set_kernel(name, kCUDA, fold_kernel(get_op(name), call_of));
  for (const auto& [name, kind] : {std::pair{"softmax", ReduceKind::Softmax},
                                   std::pair{"log_softmax", ReduceKind::LogSoftmax}})
    set_kernel(name, kCUDA, softmax_kernel(get_op(name), kind));
  for (const auto& [name, kind] :
       {std::pair{"logsumexp", ReduceKind::LogSumExp}, std::pair{"var", ReduceKind::Var},
        std::pair{"std", ReduceKind::Std}, std::pair{"var_mean", ReduceKind::Var},
        std::pair{"std_mean", ReduceKind::Std}})
    set_kernel(name, kCUDA, row_reduce_kernel(get_op(name), kind));
}

}  // namespace kiln::cuda
