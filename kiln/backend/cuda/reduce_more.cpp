#include "kiln/backend/cuda/reduce_more.h"

#include <optional>
#include <sstream>
#include <tuple>
#include <vector>

#include "kiln/backend/cuda/generated_kernels.h"
#include "kiln/backend/cuda/op_util.h"
#include "kiln/backend/cuda/reduce.h"
#include "kiln/compile/codegen/c_types.h"
#include "kiln/core/error.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/registry.h"

namespace kiln::cuda {
namespace {

using compiler::compute_type;
using compiler::storage_type;

// ---- Sources ----

// An element and its index along the row (i < 0: none yet), with the shuffles of reduce.h's
// helpers and of the scans.
constexpr const char* kBest = R"(
struct Best {
  Acc v;
  int64_t i;
};
__device__ inline Best shfl_xor(Best b, int offset) {
  return {shfl_xor(b.v, offset), shfl_xor(b.i, offset)};
}
__device__ inline Best shfl_up(Best b, unsigned delta, int width) {
  return {shfl_up(b.v, delta, width), shfl_up(b.i, delta, width)};
}
__device__ inline Best shfl_from(Best b, int lane, int width) {
  return {shfl_from(b.v, lane, width), shfl_from(b.i, lane, width)};
}
)";

constexpr const char* kShuffles = R"(
template <class T>
__device__ inline T shfl_up(T v, unsigned delta, int width) {
  return __shfl_up_sync(kFullMask, v, delta, width);
}
template <class T>
__device__ inline T shfl_from(T v, int lane, int width) {
  return __shfl_sync(kFullMask, v, lane, width);
}
)";

// Best of two: a NaN before any number, then the larger (BETTER: >) or smaller value, then the
// lower index; so the fold finds the first NaN, else the first extreme element.
constexpr const char* kArgKernel = R"(
struct Pick {
  static __device__ Best identity() { return {Acc(0), -1}; }
  __device__ Best operator()(Best a, Best b) const {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    const bool a_nan = a.v != a.v, b_nan = b.v != b.v;
    if (a_nan != b_nan) return a_nan ? a : b;
    if (!a_nan && a.v != b.v) return a.v BETTER b.v ? a : b;
    return a.i < b.i ? a : b;
  }
};

extern "C" __global__ void KERNEL(const In* x, In* values, int64_t* indices, int64_t rows,
                                  int64_t len, int group) {
  __shared__ Best shared[32];
  const Pick f;
  auto fold_row = [&](int64_t r, int64_t lane, int64_t lanes) {
    return fold(x + r * len, lane, r < rows ? len : 0, lanes, Pick::identity(), f,
                [](In v, int64_t i) { return Best{load(v), i}; });
  };
  auto write = [&](int64_t r, Best b) {
    indices[r] = b.i;
    if (values) values[r] = static_cast<In>(b.v);
  };
  if (group == 0) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
      const Best b = block_all(fold_row(r, threadIdx.x, blockDim.x), shared, f);
      if (threadIdx.x == 0) write(r, b);
    }
    return;
  }
  const int64_t per_block = blockDim.x / group, lane = threadIdx.x % group;
  for (int64_t base = blockIdx.x * per_block; base < rows; base += gridDim.x * per_block) {
    const int64_t r = base + threadIdx.x / group;
    const Best b = group_all(fold_row(r, lane, group), group, f);
    if (r < rows && lane == 0) write(r, b);
  }
}
)";

// The running extreme: a later element b takes over when it is NaN, or when it is at least as
// large (TAKES: >=) or as small as a and a is not NaN.
constexpr const char* kRunningExtreme = R"(
using State = Best;
struct Step {
  static __device__ Best identity() { return {Acc(0), -1}; }
  __device__ Best operator()(Best a, Best b) const {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    return b.v != b.v || (a.v == a.v && b.v TAKES a.v) ? b : a;
  }
};
__device__ inline Best state_of(In v, int64_t i) { return {load(v), i}; }
__device__ inline void store(In* y, int64_t* indices, int64_t o, Best s) {
  y[o] = static_cast<In>(s.v);
  indices[o] = s.i;
}
)";

constexpr const char* kRunningFold = R"(
using State = Acc;
using Step = FOLD;
__device__ inline Acc state_of(In v, int64_t) { return load(v); }
__device__ inline void store(In* y, int64_t*, int64_t o, Acc s) { y[o] = static_cast<In>(s); }
)";

// Scans each row a tile at a time: every lane folds its run of the tile, the lanes' exclusive
// prefix (after the tiles before) starts each run's second pass, which writes. Tiles step by
// `len`, not the row's end, so that lanes past the last row shuffle in step.
constexpr const char* kScanKernel = R"(
template <class T, class F>
__device__ T group_inclusive(T v, int width, F f) {
  const int lane = threadIdx.x % width;
  for (int d = 1; d < width; d *= 2) {
    const T before = shfl_up(v, d, width);
    if (lane >= d) v = f(before, v);
  }
  return v;
}

// The fold of v over the row's lanes before this one (a group, or the block when group is 0);
// total gets the fold over all of them.
template <class T, class F>
__device__ T lanes_exclusive(T v, int group, T* shared, F f, T& total) {
  const int width = group == 0 ? 32 : group, lane = threadIdx.x % width;
  const T inclusive = group_inclusive(v, width, f);
  const T before = shfl_up(inclusive, 1, width);
  const T exclusive = lane == 0 ? F::identity() : before;
  total = shfl_from(inclusive, width - 1, width);
  if (group != 0) return exclusive;
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
  __syncthreads();  // readers of the previous call are done with `shared`
  if (lane == 0) shared[warp] = total;
  __syncthreads();
  T warps_before = F::identity();
  total = F::identity();
  for (int w = 0; w < warps; ++w) {
    if (w == warp) warps_before = total;
    total = f(total, shared[w]);
  }
  return f(warps_before, exclusive);
}

extern "C" __global__ void KERNEL(const In* x, In* y, int64_t* indices, int64_t rows,
                                  int64_t len, int group, int64_t per_lane) {
  __shared__ State shared[32];
  const Step f;
  auto row = [&](int64_t r, int64_t lane, int64_t lanes) {
    const int64_t end = r < rows ? len : 0, tile = lanes * per_lane;
    const In* p = x + r * len;
    State carry = Step::identity();
    for (int64_t t = 0; t < len; t += tile) {
      const int64_t begin = t + lane * per_lane;
      const int64_t stop = begin + per_lane < end ? begin + per_lane : end;
      State run = Step::identity();
      for (int64_t i = begin; i < stop; ++i) run = f(run, state_of(p[i], i));
      State total;
      run = f(carry, lanes_exclusive(run, group, shared, f, total));
      for (int64_t i = begin; i < stop; ++i) {
        run = f(run, state_of(p[i], i));
        store(y, indices, r * len + i, run);
      }
      carry = f(carry, total);
    }
  };
  if (group == 0) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) row(r, threadIdx.x, blockDim.x);
    return;
  }
  const int64_t per_block = blockDim.x / group;
  for (int64_t base = blockIdx.x * per_block; base < rows; base += gridDim.x * per_block)
    row(base + threadIdx.x / group, threadIdx.x % group, group);
}
)";

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

std::string source(const std::string& comment, ScalarType dt, ScalarType acc,
                   const std::string& body) {
  std::ostringstream os;
  os << "// " << comment << ": " << dtype_name(dt) << "\n"
     << "#include <cstdint>\n#include <limits>\n\n#include \"kiln/core/half.h\"\n\n"
     << "using In = " << storage_type(dt) << ";\n"
     << "using Acc = " << compute_type(acc) << ";\n"
     << kReduceDeviceSource << kShuffles << kBest << body;
  return os.str();
}

const char* scan_name(ScanKind k) {
  switch (k) {
    case ScanKind::Sum:
      return "cumsum";
    case ScanKind::Prod:
      return "cumprod";
    case ScanKind::Max:
      return "cummax";
    case ScanKind::Min:
      return "cummin";
  }
  return "";
}

bool is_extreme(ScanKind k) { return k == ScanKind::Max || k == ScanKind::Min; }

// The dtype a scan runs in: float64 for floats and int64 for integers (sums and products), the
// element's own for extremes.
ScalarType scan_state(ScanKind k, ScalarType dt) {
  if (is_extreme(k)) return dt;
  return is_floating_point(dt) ? kFloat64 : kInt64;
}

}  // namespace

std::string arg_reduce_kernel_name(bool max, ScalarType dt) {
  return std::string(max ? "kiln_argmax_" : "kiln_argmin_") + std::string(dtype_name(dt));
}

std::string arg_reduce_source(bool max, ScalarType dt, const std::string& name) {
  KILN_CHECK(is_known_dtype(dt), "cuda: no arg reduction kernel for dtype ", dtype_name(dt));
  std::string kernel = kArgKernel;
  replace_all(kernel, "BETTER", max ? ">" : "<");
  replace_all(kernel, "KERNEL", name);
  return source(max ? "argmax" : "argmin", dt, dt, kernel);
}

bool scan_supported(ScanKind kind, ScalarType dt) {
  return is_known_dtype(dt) && (is_extreme(kind) || dt != kBool);
}

std::string scan_kernel_name(ScanKind kind, ScalarType dt) {
  return "kiln_" + std::string(scan_name(kind)) + "_" + std::string(dtype_name(dt));
}

std::string scan_source(ScanKind kind, ScalarType dt, const std::string& name) {
  KILN_CHECK(scan_supported(kind, dt), "cuda: no ", scan_name(kind), " kernel for dtype ",
             dtype_name(dt));
  std::string state = is_extreme(kind) ? kRunningExtreme : kRunningFold;
  replace_all(state, "TAKES", kind == ScanKind::Max ? ">=" : "<=");
  replace_all(state, "FOLD", kind == ScanKind::Sum ? "Sum" : "Prod");
  std::string kernel = state + kScanKernel;
  replace_all(kernel, "KERNEL", name);
  return source(scan_name(kind), dt, scan_state(kind, dt), kernel);
}

namespace {

// ---- Launches ----

constexpr int64_t kBlockPerLane = 8;  // elements a lane scans per tile, a block per row

bool takes(const std::vector<Tensor>& in, const std::vector<Tensor>& out) {
  const int dev = device_of(out[0]);
  return on_device(in, dev) && on_device(out, dev) && in[0].numel() > 0;
}

// argmax, argmin (attrs: dim?, keepdim) and max_dim, min_dim (dim, keepdim; values, indices).
KernelFn arg_kernel(const OpDef& op, bool max, bool with_values) {
  const OpDef* p = &op;
  return [p, max, with_values](const std::vector<Tensor>& in, std::vector<Tensor>& out,
                               const Attrs& attrs) {
    const Tensor& self = in[0];
    if (!takes(in, out)) return cpu_fallback(*p, in, out, attrs);
    const std::optional<int64_t> dim = attrs.opt_i(0);
    // No dim (or a 0-dim input): the index into the flattened, row-major tensor.
    const std::vector<int64_t> dims = dim ? std::vector<int64_t>{*dim} : std::vector<int64_t>{};
    const RowLayout l = rows_last(self, dims_mask(self.dim(), dims), self.dtype());
    const Tensor values = with_values ? contiguous_target(out[0]) : Tensor();
    const Tensor indices = contiguous_target(out[with_values ? 1 : 0]);
    const int dev = device_of(indices);
    const std::string name = arg_reduce_kernel_name(max, self.dtype());
    const cudaKernel_t fn =
        generated_kernel(dev, name, [&] { return arg_reduce_source(max, self.dtype(), name); });
    const void* src = l.x.data_ptr();
    void* values_dst = values.defined() ? values.data_ptr() : nullptr;
    void* indices_dst = indices.data_ptr();
    int64_t rows = l.rows, len = l.len;
    int group = row_group(len);
    void* params[] = {&src, &values_dst, &indices_dst, &rows, &len, &group};
    launch_rows(*p, fn, rows, group, dev, params);
    if (values.defined() && !values.is_same(out[0])) copy_into(out[0], values);
    if (!indices.is_same(out.back())) copy_into(out.back(), indices);
  };
}

// cumsum, cumprod (attrs: dim, dtype) and cummax, cummin (dim; values, indices). Sums and
// products convert the input to the output's dtype first, as the CPU kernel does.
KernelFn scan_kernel(const OpDef& op, ScanKind kind) {
  const OpDef* p = &op;
  return [p, kind](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& attrs) {
    const Tensor& self = in[0];
    const ScalarType dt = out[0].dtype();
    if (!takes(in, out) || !scan_supported(kind, dt)) return cpu_fallback(*p, in, out, attrs);
    const int64_t nd = self.dim();
    const int64_t dim = nd == 0 ? 0 : (attrs.i(0) < 0 ? attrs.i(0) + nd : attrs.i(0));
    std::vector<bool> last(nd, false);
    if (nd > 0) last[dim] = true;
    const RowLayout l = rows_last(self, last, dt);
    // Results in the layout of l.x, moved back into the outputs unless they are that layout.
    const bool moved = nd > 0 && dim != nd - 1;
    auto target = [&](const Tensor& o) {
      return moved ? empty(l.x.sizes(), o.options()) : contiguous_target(o);
    };
    auto write_back = [&](const Tensor& o, const Tensor& t) {
      if (!t.is_same(o)) copy_into(o, moved ? t.movedim({nd - 1}, {dim}) : t);
    };
    const Tensor y = target(out[0]);
    const Tensor indices = is_extreme(kind) ? target(out[1]) : Tensor();
    const int dev = device_of(y);
    const std::string name = scan_kernel_name(kind, dt);
    const cudaKernel_t fn =
        generated_kernel(dev, name, [&] { return scan_source(kind, dt, name); });
    const void* src = l.x.data_ptr();
    void* dst = y.data_ptr();
    void* indices_dst = indices.defined() ? indices.data_ptr() : nullptr;
    int64_t rows = l.rows, len = l.len;
    int group = row_group(len);
    int64_t per_lane = group == 0 ? kBlockPerLane : (len + group - 1) / group;
    void* params[] = {&src, &dst, &indices_dst, &rows, &len, &group, &per_lane};
    launch_rows(*p, fn, rows, group, dev, params);
    write_back(out[0], y);
    if (indices.defined()) write_back(out[1], indices);
  };
}

}  // namespace

void register_more_reduce_kernels() {
  for (const auto& [name, max, with_values] :
       {std::tuple{"argmax", true, false}, std::tuple{"argmin", false, false},
        std::tuple{"max_dim", true, true}, std::tuple{"min_dim", false, true}})
    set_kernel(name, kCUDA, arg_kernel(get_op(name), max, with_values));
  for (const auto& [name, kind] :
       {std::pair{"cumsum", ScanKind::Sum}, std::pair{"cumprod", ScanKind::Prod},
        std::pair{"cummax", ScanKind::Max}, std::pair{"cummin", ScanKind::Min}})
    set_kernel(name, kCUDA, scan_kernel(get_op(name), kind));
}

}  // namespace kiln::cuda
