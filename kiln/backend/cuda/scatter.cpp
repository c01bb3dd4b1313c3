#include "kiln/backend/cuda/scatter.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "kiln/backend/cuda/device_assert.h"
#include "kiln/backend/cuda/generated_kernels.h"
#include "kiln/backend/cuda/op_util.h"
#include "kiln/compile/codegen/c_types.h"
#include "kiln/core/error.h"
#include "kiln/core/grad_mode.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/registry.h"

namespace kiln::cuda {
namespace {

using compiler::storage_type;
using cpu::ScatterOp;

constexpr int kMaxDims = 8;
constexpr unsigned kThreads = 256;

// The dtypes the reductions compute in, as the CPU kernel's: float32 (also for 16-bit floats),
// float64 and int64 (for every integer dtype).
ScalarType reduce_dtype(ScalarType t) {
  if (t == kFloat64) return kFloat64;
  return is_floating_point(t) ? kFloat32 : kInt64;
}

const char* op_name(ScatterOp op) {
  switch (op) {
    case ScatterOp::Assign:
      return "assign";
    case ScatterOp::Sum:
      return "sum";
    case ScatterOp::Prod:
      return "prod";
    case ScatterOp::Mean:
      return "mean";
    case ScatterOp::Max:
      return "amax";
    case ScatterOp::Min:
      return "amin";
  }
  return "";
}

std::string header(const std::string& types) {
  return "#include <cstdint>\n#include <cstring>\n\n" + std::string(kDeviceAssertSource) + types;
}

// Every scatter: `store(p, v)` (defined before it) puts v into the element at p.
constexpr const char* kScatter = R"cuda(
struct ScatterArgs {
  T* out;
  const T* src;
  const Index* index;
  int* counts;
  int64_t sizes[8];
  int64_t out_strides[8];
  int64_t src_strides[8];
  int64_t index_strides[8];
  int64_t ndim, dim, dim_size, numel, allow_negative;
  unsigned long long value;
};

extern "C" __global__ void KERNEL(const ScatterArgs a, KilnDeviceAssert* record,
                                  unsigned long long launch) {
  T value;
  memcpy(&value, &a.value, sizeof(T));
  const int64_t lowest = a.allow_negative ? -a.dim_size : 0;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < a.numel;
       i += step) {
    int64_t r = i, o = 0, s = 0, x = 0;
    for (int d = static_cast<int>(a.ndim) - 1; d >= 0; --d) {
      const int64_t size = a.sizes[d], q = r / size, c = r - q * size;
      r = q;
      x += c * a.index_strides[d];
      s += c * a.src_strides[d];
      if (d != a.dim) o += c * a.out_strides[d];
    }
    int64_t v = static_cast<int64_t>(a.index[x]);
    if (!KILN_DEVICE_CHECK(v >= lowest && v < a.dim_size, record, launch,
                           "index {value} is out of bounds for dimension {dim} with size {bound}",
                           v, a.dim_size, static_cast<int>(a.dim)))
      continue;
    if (v < 0) v += a.dim_size;
    o += v * a.out_strides[a.dim];
    store(a.out + o, a.src ? a.src[s] : value);
    if (a.counts) atomicAdd(a.counts + o, 1);
  }
}
)cuda";

// Plain stores: with repeated indices, one of the writes wins.
constexpr const char* kAssignStore = R"cuda(
__device__ void store(T* p, T v) { *p = v; }
)cuda";

constexpr const char* kAddStore = R"cuda(
__device__ void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ void atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ void atomic_add(int64_t* p, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
__device__ void store(T* p, T v) { atomic_add(p, v); }
)cuda";

// Operations without a native atomic: a compare-and-swap loop on the element's bits, around
// `combine` (defined before it).
constexpr const char* kCasStore = R"cuda(
__device__ void store(T* p, T v) {
  Bits* const q = reinterpret_cast<Bits*>(p);
  Bits seen = *q;
  while (true) {
    T now;
    memcpy(&now, &seen, sizeof(T));
    const T next = combine(now, v);
    Bits want;
    memcpy(&want, &next, sizeof(T));
    if (want == seen) return;
    const Bits old = atomicCAS(q, seen, want);
    if (old == seen) return;
    seen = old;
  }
}
)cuda";

// amax and amin let NaN win, as the CPU kernel does (b != b is false for integers).
const char* combine_source(ScatterOp op) {
  switch (op) {
    case ScatterOp::Prod:
      return "__device__ T combine(T a, T b) { return a * b; }\n";
    case ScatterOp::Max:
      return "__device__ T combine(T a, T b) { return (b > a || b != b) ? b : a; }\n";
    case ScatterOp::Min:
      return "__device__ T combine(T a, T b) { return (b < a || b != b) ? b : a; }\n";
    default:
      KILN_FAIL("cuda: scatter ", op_name(op), " has no compare-and-swap kernel");
  }
}

constexpr const char* kMean = R"cuda(
__device__ float divide_mean(float sum, int n) { return sum / static_cast<float>(n); }
__device__ double divide_mean(double sum, int n) { return sum / static_cast<double>(n); }
__device__ int64_t divide_mean(int64_t sum, int n) {  // rounds down, as floor division
  const int64_t q = sum / n;
  return (sum % n != 0 && sum < 0) ? q - 1 : q;
}

extern "C" __global__ void KERNEL(T* out, const int* counts, int64_t n, int include_self) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    if (counts[i] > 0) out[i] = divide_mean(out[i], counts[i] + include_self);
}
)cuda";

constexpr const char* kLinearIndex = R"cuda(
struct LinearIndexArgs {
  int64_t* out;
  const int64_t* index[8];
  int64_t strides[8][8];
  int64_t sizes[8];
  int64_t dim_sizes[8];
  int64_t dims[8];
  int64_t count, ndim, numel;
};

extern "C" __global__ void KERNEL(const LinearIndexArgs a, KilnDeviceAssert* record,
                                  unsigned long long launch) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < a.numel;
       i += step) {
    int64_t coords[8], r = i;
    for (int d = static_cast<int>(a.ndim) - 1; d >= 0; --d) {
      coords[d] = r % a.sizes[d];
      r /= a.sizes[d];
    }
    int64_t linear = 0;
    for (int k = 0; k < a.count; ++k) {
      int64_t at = 0;
      for (int d = 0; d < a.ndim; ++d) at += coords[d] * a.strides[k][d];
      const int64_t v = a.index[k][at], size = a.dim_sizes[k];
      if (!KILN_DEVICE_CHECK(v >= -size && v < size, record, launch,
                             "index {value} is out of bounds for dimension {dim} with size {bound}",
                             v, size, static_cast<int>(a.dims[k]))) {
        linear = -1;
        break;
      }
      linear = linear * size + (v < 0 ? v + size : v);
    }
    a.out[i] = linear;
  }
}
)cuda";

std::string scatter_kernel_name(ScatterOp op, ScalarType dtype, ScalarType index) {
  std::string name = std::string("kiln_scatter_") + op_name(op) + "_";
  if (op == ScatterOp::Assign) {
    name += 'b';
    name += std::to_string(element_size(dtype));
  } else {
    name += dtype_name(dtype);
  }
  name += '_';
  name += dtype_name(index);
  return name;
}

}  // namespace

std::string scatter_source(ScatterOp op, ScalarType dtype, ScalarType index,
                           const std::string& name) {
  KILN_CHECK(is_index_dtype(index), "cuda: scatter indices are int32 or int64, not ", index);
  const std::string index_type = "using Index = " + storage_type(index) + ";\n";
  if (op == ScatterOp::Assign) {
    return header("using T = " + std::string(unsigned_type(element_size(dtype))) + ";\n" +
                  index_type) +
           kAssignStore + named_kernel(kScatter, name);
  }
  KILN_CHECK(dtype == kFloat32 || dtype == kFloat64 || dtype == kInt64, "cuda: scatter ",
             op_name(op), " reduces in float32, float64 or int64, not ", dtype);
  const std::string types = "using T = " + storage_type(dtype) +
                            ";\nusing Bits = " + unsigned_type(element_size(dtype)) + ";\n" +
                            index_type;
  const std::string store =
      op == ScatterOp::Sum ? std::string(kAddStore) : combine_source(op) + std::string(kCasStore);
  return header(types) + store + named_kernel(kScatter, name);
}

std::string scatter_mean_source(ScalarType dtype, const std::string& name) {
  KILN_CHECK(dtype == kFloat32 || dtype == kFloat64 || dtype == kInt64,
             "cuda: scatter mean divides float32, float64 or int64, not ", dtype);
  return "#include <cstdint>\n\nusing T = " + storage_type(dtype) + ";\n" +
         named_kernel(kMean, name);
}

std::string linear_index_source(const std::string& name) {
  return header("") + named_kernel(kLinearIndex, name);
}

namespace {

// ---- Launches ----

uint64_t address(const Tensor& t) {
  return t.defined() ? reinterpret_cast<uintptr_t>(t.data_ptr()) : 0;
}

// Appends value_at(d) for d < n, then zeros up to kMaxDims.
template <class F>
void push_dims(std::vector<uint64_t>& words, int64_t n, const F& value_at) {
  for (int64_t d = 0; d < kMaxDims; ++d)
    words.push_back(static_cast<uint64_t>(d < n ? value_at(d) : 0));
}

// One element of dtype dt holding value, as the low bytes of a word.
uint64_t bits_of(const Scalar& value, ScalarType dt) {
  const Tensor t = scalar_tensor(value, TensorOptions(dt));
  uint64_t bits = 0;
  std::memcpy(&bits, t.data_ptr(), t.element_size());
  return bits;
}

// What an element that receives values starts from when self takes no part (include_self =
// false): the identity of the reduction in its compute dtype.
Scalar identity(ScatterOp op, ScalarType dt) {
  const bool floating = is_floating_point(dt);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  switch (op) {
    case ScatterOp::Prod:
      return Scalar(int64_t{1});
    case ScatterOp::Max:
      return floating ? Scalar(-kInf) : Scalar(std::numeric_limits<int64_t>::lowest());
    case ScatterOp::Min:
      return floating ? Scalar(kInf) : Scalar(std::numeric_limits<int64_t>::max());
    default:
      return Scalar(int64_t{0});
  }
}

// One launch of the scatter kernel over index's elements; out, index and src (when defined)
// have index's rank, at most kMaxDims.
void launch_scatter(const char* op, ScatterOp combine, const Tensor& out, int64_t dim,
                    const Tensor& index, const Tensor& src, uint64_t value, const Tensor& counts,
                    bool allow_negative) {
  const int64_t nd = index.dim();
  const int dev = device_of(out);
  std::vector<uint64_t> words = {address(out), address(src), address(index), address(counts)};
  push_dims(words, nd, [&](int64_t d) { return index.size(d); });
  push_dims(words, nd, [&](int64_t d) { return out.stride(d); });
  push_dims(words, nd, [&](int64_t d) { return src.defined() ? src.stride(d) : 0; });
  push_dims(words, nd, [&](int64_t d) { return index.stride(d); });
  for (int64_t v : {nd, dim, out.size(dim), index.numel(), int64_t{allow_negative}})
    words.push_back(static_cast<uint64_t>(v));
  words.push_back(value);
  const std::string name = scatter_kernel_name(combine, out.dtype(), index.dtype());
  const cudaKernel_t fn = generated_kernel(
      dev, name, [&] { return scatter_source(combine, out.dtype(), index.dtype(), name); });
  AssertingLaunch check = asserting_launch(dev, op, name);
  void* params[] = {words.data(), &check.record, &check.id};
  launch_kernel(op, fn, grid_stride_blocks(dev, index.numel(), kThreads), dim3(kThreads), params);
}

// out (contiguous) /= counts + include_self where an element received values.
void divide_by_counts(const char* op, const Tensor& out, const Tensor& counts, bool include_self) {
  const int dev = device_of(out);
  const std::string name = "kiln_scatter_mean_" + std::string(dtype_name(out.dtype()));
  const cudaKernel_t fn =
      generated_kernel(dev, name, [&] { return scatter_mean_source(out.dtype(), name); });
  void* p = out.data_ptr();
  const void* c = counts.data_ptr();
  int64_t n = out.numel();
  int self = include_self ? 1 : 0;
  void* params[] = {&p, &c, &n, &self};
  launch_kernel(op, fn, grid_stride_blocks(dev, n, kThreads), dim3(kThreads), params);
}

// How a scatter writes: the op named in errors, the reduction, whether self takes part in it,
// and whether negative indices count from the end.
struct ScatterSpec {
  const char* op;
  ScatterOp combine = ScatterOp::Assign;
  bool include_self = true;
  bool allow_negative = false;
};

// out (holding self's values, any strides) receives src, or `value` where src is undefined,
// along dim at the positions in index; out, index and src have one rank, at most kMaxDims.
// Reductions run in reduce_dtype on a contiguous copy unless out already is one.
void scatter_into(const ScatterSpec& s, const Tensor& out, int64_t dim, const Tensor& index,
                  const Tensor& src, const Scalar& value) {
  if (index.numel() == 0) return;
  if (s.combine == ScatterOp::Assign) {
    const Tensor from = src.defined() ? src.to(out.dtype()) : src;
    launch_scatter(s.op, s.combine, out, dim, index, from, bits_of(value, out.dtype()), Tensor(),
                   s.allow_negative);
    return;
  }
  const ScalarType dt = reduce_dtype(out.dtype());
  const Tensor work = out.dtype() == dt && out.is_contiguous() ? out : out.to(dt).contiguous();
  const Tensor from = src.defined() ? src.to(dt) : src;
  if (!s.include_self) {
    launch_scatter(s.op, ScatterOp::Assign, work, dim, index, Tensor(),
                   bits_of(identity(s.combine, dt), dt), Tensor(), s.allow_negative);
  }
  const bool mean = s.combine == ScatterOp::Mean;
  const Tensor counts =
      mean ? zeros(work.sizes(), TensorOptions(kInt32).device(work.device())) : Tensor();
  launch_scatter(s.op, mean ? ScatterOp::Sum : s.combine, work, dim, index, from,
                 bits_of(value, dt), counts, s.allow_negative);
  if (mean) divide_by_counts(s.op, work, counts, s.include_self);
  if (!work.is_same(out)) out.copy_(work);
}

// ---- Shapes ----

Tensor as_1d(const Tensor& t) { return t.dim() == 0 ? t.view({1}) : t; }

int64_t wrapped(const char* op, int64_t dim, const Tensor& t) {
  return meta::wrap_dim(op, dim, std::max<int64_t>(t.dim(), 1));
}

// out starts as a copy of self, unless it is self (an in-place call).
void start_from(const Tensor& out, const Tensor& self) {
  if (out.numel() > 0 && out.data_ptr() != self.data_ptr()) out.copy_(self);
}

// Runs write(target) for a contiguous target holding out's values: out itself, or a copy that
// is then copied back into out.
template <class F>
void write_contiguous(const Tensor& out, const F& write) {
  const Tensor target = out.is_contiguous() ? out : out.contiguous();
  write(target);
  if (!target.is_same(out)) out.copy_(target);
}

// The 1-D idx seen with `sizes` but idx's length along dim: it steps along dim and stands still
// along the other dims.
Tensor along(const Tensor& idx, IntArrayRef sizes, int64_t dim) {
  std::vector<int64_t> s, strides;
  for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d) {
    s.push_back(d == dim ? idx.size(0) : sizes[d]);
    strides.push_back(d == dim ? idx.stride(0) : 0);
  }
  return idx.as_strided(s, strides, idx.storage_offset());
}

// sizes with [first, first + count) replaced by `with`.
std::vector<int64_t> replaced(IntArrayRef sizes, int64_t first, int64_t count,
                              const std::vector<int64_t>& with) {
  std::vector<int64_t> s(sizes.begin(), sizes.begin() + first);
  s.insert(s.end(), with.begin(), with.end());
  s.insert(s.end(), sizes.begin() + first + count, sizes.end());
  return s;
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t s : v) n *= s;
  return n;
}

// ---- Linear indices ----

// The linear position (row-major over `dim_sizes`) of each element of `shape` that the int32
// or int64 `indices` broadcast to, as a contiguous int64 tensor; every index is checked against
// its size (negatives count from the end), a failure giving -1. At most kMaxDims of each.
Tensor linear_index(const char* op, const std::vector<Tensor>& indices,
                    const std::vector<int64_t>& dim_sizes, const std::vector<int64_t>& dims,
                    const std::vector<int64_t>& shape) {
  const Device device = indices.at(0).device();
  const int dev = device_of(indices[0]);
  const int64_t n = product(shape), nd = static_cast<int64_t>(shape.size()),
                count = static_cast<int64_t>(indices.size());
  Tensor out = empty({n}, TensorOptions(kInt64).device(device));
  if (n == 0) return out;
  std::vector<Tensor> expanded;
  for (const Tensor& t : indices) expanded.push_back(t.to(kInt64).expand(shape));
  std::vector<uint64_t> words = {address(out)};
  push_dims(words, count, [&](int64_t k) { return address(expanded[k]); });
  for (int64_t k = 0; k < kMaxDims; ++k)
    push_dims(words, k < count ? nd : 0, [&](int64_t d) { return expanded[k].stride(d); });
  push_dims(words, nd, [&](int64_t d) { return shape[d]; });
  push_dims(words, count, [&](int64_t k) { return dim_sizes[k]; });
  push_dims(words, count, [&](int64_t k) { return dims[k]; });
  for (int64_t v : {count, nd, n}) words.push_back(static_cast<uint64_t>(v));
  const std::string name = "kiln_linear_index";
  const cudaKernel_t fn = generated_kernel(dev, name, [&] { return linear_index_source(name); });
  AssertingLaunch check = asserting_launch(dev, op, name);
  void* params[] = {words.data(), &check.record, &check.id};
  launch_kernel(op, fn, grid_stride_blocks(dev, n, kThreads), dim3(kThreads), params);
  return out;
}

// Advanced indexing's layout (Note [Advanced index layout] in kiln/ops/index/advanced.cpp):
// self permuted so that the indexed dims are together from `first` on, and the shape B that the
// index tensors broadcast to.
struct AdvancedPlan {
  std::vector<Tensor> indices;  // the defined index tensors, in dim order
  std::vector<int64_t> dims, dim_sizes, perm, broadcast;
  int64_t first = 0;
  bool adjacent = true;
};

AdvancedPlan advanced_plan(const char* op, const Tensor& self, const std::vector<Tensor>& idx) {
  AdvancedPlan p;
  std::vector<SymShape> shapes;
  for (size_t d = 0; d < idx.size(); ++d) {
    if (!idx[d].defined()) continue;
    p.indices.push_back(idx[d]);
    p.dims.push_back(static_cast<int64_t>(d));
    p.dim_sizes.push_back(self.size(static_cast<int64_t>(d)));
    shapes.push_back(idx[d].sym_sizes());
  }
  for (const SymInt& s : meta::broadcast_shapes(op, shapes)) p.broadcast.push_back(s.guard_int());
  const int64_t k = static_cast<int64_t>(p.dims.size());
  p.adjacent = p.dims.back() - p.dims.front() + 1 == k;
  p.first = p.adjacent ? p.dims.front() : 0;
  if (!p.adjacent) p.perm = p.dims;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (p.adjacent || std::find(p.dims.begin(), p.dims.end(), d) == p.dims.end())
      p.perm.push_back(d);
  return p;
}

Tensor linear_index(const char* op, const AdvancedPlan& p) {
  return linear_index(op, p.indices, p.dim_sizes, p.dims, p.broadcast);
}

// x (self permuted) with its indexed dims read as one.
Tensor merged(const Tensor& x, const AdvancedPlan& p) {
  return x.view(
      replaced(x.sizes(), p.first, static_cast<int64_t>(p.dims.size()), {product(p.dim_sizes)}));
}

bool fits(const Tensor& self, const AdvancedPlan& p) {
  return self.dim() <= kMaxDims && static_cast<int64_t>(p.broadcast.size()) <= kMaxDims;
}

// ---- Kernels ----

enum class ScatterKind { Src, Value, Add, Reduce };

// The attributes after dim: Src: reduce?; Value: value, reduce?; Add: none; Reduce: reduce,
// include_self.
ScatterSpec scatter_spec(const char* op, ScatterKind kind, const Attrs& a) {
  ScatterSpec s{op};
  const size_t reduce_at = kind == ScatterKind::Value ? 2 : 1;
  switch (kind) {
    case ScatterKind::Src:
    case ScatterKind::Value:
      if (!a.is_none(reduce_at)) s.combine = cpu::scatter_op_from_name(op, a.str(reduce_at));
      break;
    case ScatterKind::Add:
      s.combine = ScatterOp::Sum;
      break;
    case ScatterKind::Reduce:
      s.combine = cpu::scatter_op_from_name(op, a.str(1));
      s.include_self = a.b(2);
      break;
  }
  return s;
}

// Reductions of bool raise the CPU kernel's error.
bool reduces_bool(ScatterOp op, const Tensor& self) {
  return op != ScatterOp::Assign && self.dtype() == kBool;
}

KernelFn scatter_kernel(const char* name, ScatterKind kind) {
  const OpDef* op = &get_op(name);
  return [op, name, kind](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
    const Tensor &self = in[0], &index = in[1];
    const Tensor src = kind == ScatterKind::Value ? Tensor() : in[2];
    const ScatterSpec s = scatter_spec(name, kind, a);
    if (!on_device({self, index, src, out[0]}, device_of(out[0])) || self.dim() > kMaxDims ||
        reduces_bool(s.combine, self))
      return cpu_fallback(*op, in, out, a);
    NoGradGuard no_grad;
    start_from(out[0], self);
    const Scalar value = kind == ScatterKind::Value ? a.scalar(1) : Scalar();
    scatter_into(s, as_1d(out[0]), wrapped(name, a.i(0), self), as_1d(index),
                 src.defined() ? as_1d(src) : src, value);
  };
}

// index_add (alpha scales the source) and index_copy: source's slices along dim go to the
// positions in the 1-D index.
KernelFn index_source_kernel(const char* name, ScatterOp combine) {
  const OpDef* op = &get_op(name);
  return
      [op, name, combine](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
        const Tensor &self = in[0], &index = in[1];
        if (!on_device({self, index, in[2], out[0]}, device_of(out[0])) || self.dim() > kMaxDims ||
            reduces_bool(combine, self))
          return cpu_fallback(*op, in, out, a);
        NoGradGuard no_grad;
        const int64_t dim = wrapped(name, a.i(0), self);
        Tensor source = as_1d(in[2]);
        if (combine == ScatterOp::Sum && !(a.scalar(1).to<double>() == 1))
          source = (source * a.scalar(1)).to(self.dtype());
        start_from(out[0], self);
        const Tensor idx = index.reshape({index.numel()});
        scatter_into({name, combine}, as_1d(out[0]), dim, along(idx, source.sizes(), dim), source,
                     Scalar());
      };
}

// index_fill (self, index, value: a 0-dim tensor, possibly a host number).
void index_fill(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  static const OpDef& op = get_op("index_fill");
  const Tensor &self = in[0], &index = in[1];
  if (!on_device({self, index, out[0]}, device_of(out[0])) || self.dim() > kMaxDims)
    return cpu_fallback(op, in, out, a);
  NoGradGuard no_grad;
  const int64_t dim = wrapped("index_fill", a.i(0), self);
  const Scalar value = in[2].item();
  start_from(out[0], self);
  const Tensor o = as_1d(out[0]);
  scatter_into({"index_fill", ScatterOp::Assign, true, /*allow_negative=*/true}, o, dim,
               along(index.reshape({index.numel()}), o.sizes(), dim), Tensor(), value);
}

// index (self, indices...): self's indexed dims read as one, then index_select with the linear
// index.
void advanced_index(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  static const OpDef& op = get_op("index");
  const Tensor& self = in[0];
  const std::vector<Tensor> idx(in.begin() + 1, in.end());
  if (!on_device(in, device_of(out[0])) || !on_device(out, device_of(out[0])))
    return cpu_fallback(op, in, out, a);
  const AdvancedPlan p = advanced_plan("index", self, idx);
  if (!fits(self, p)) return cpu_fallback(op, in, out, a);
  NoGradGuard no_grad;
  const Tensor linear = linear_index("index", p);
  if (out[0].numel() == 0) return;
  const Tensor x = self.permute(p.perm).contiguous();
  out[0].copy_(merged(x, p).index_select(p.first, linear).view(out[0].sizes()));
}

// index_put (self, values, indices...; accumulate): a scatter of values along self's indexed
// dims read as one.
void index_put(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  static const OpDef& op = get_op("index_put");
  const Tensor &self = in[0], &values = in[1];
  const std::vector<Tensor> idx(in.begin() + 2, in.end());
  const bool accumulate = a.b(0);
  if (!on_device(in, device_of(out[0])) || !on_device(out, device_of(out[0])) ||
      (accumulate && self.dtype() == kBool))
    return cpu_fallback(op, in, out, a);
  const AdvancedPlan p = advanced_plan("index_put", self, idx);
  if (!fits(self, p)) return cpu_fallback(op, in, out, a);
  NoGradGuard no_grad;
  const Tensor linear = linear_index("index_put", p);  // checked before anything is written
  start_from(out[0], self);
  if (linear.numel() == 0 || out[0].numel() == 0) return;
  const int64_t k = static_cast<int64_t>(p.dims.size());
  write_contiguous(out[0], [&](const Tensor& target) {
    const Tensor x = target.permute(p.perm);
    const Tensor work = p.adjacent ? x : x.contiguous();  // adjacent dims of it merge in place
    const std::vector<int64_t> rows = replaced(work.sizes(), p.first, k, {linear.numel()});
    const Tensor v = values.to(self.dtype())
                         .expand(replaced(work.sizes(), p.first, k, p.broadcast))
                         .reshape(rows);
    scatter_into({"index_put", accumulate ? ScatterOp::Sum : ScatterOp::Assign}, merged(work, p),
                 p.first, along(linear, rows, p.first), v, Scalar());
    if (!work.is_same(x)) x.copy_(work);
  });
}

// take (self, index): self's elements at flat positions (negatives from the end).
void take(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  static const OpDef& op = get_op("take");
  const Tensor &self = in[0], &index = in[1];
  if (!on_device({self, index, out[0]}, device_of(out[0]))) return cpu_fallback(op, in, out, a);
  NoGradGuard no_grad;
  const Tensor pos =
      linear_index("take", {index.reshape({-1})}, {self.numel()}, {0}, {index.numel()});
  if (pos.numel() == 0) return;
  out[0].copy_(self.reshape({-1}).index_select(0, pos).view(out[0].sizes()));
}

// put (self, index, source; accumulate): source's elements to self's flat positions.
void put(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  static const OpDef& op = get_op("put");
  const Tensor &self = in[0], &index = in[1], &source = in[2];
  const bool accumulate = a.b(0);
  if (!on_device({self, index, source, out[0]}, device_of(out[0])) ||
      (accumulate && self.dtype() == kBool))
    return cpu_fallback(op, in, out, a);
  NoGradGuard no_grad;
  start_from(out[0], self);
  write_contiguous(out[0], [&](const Tensor& target) {
    scatter_into({"put", accumulate ? ScatterOp::Sum : ScatterOp::Assign, true,
                  /*allow_negative=*/true},
                 target.view({-1}), 0, index.reshape({-1}), source.reshape({-1}), Scalar());
  });
}

}  // namespace

void register_scatter_kernels() {
  set_kernel("scatter", kCUDA, scatter_kernel("scatter", ScatterKind::Src));
  set_kernel("scatter_value", kCUDA, scatter_kernel("scatter_value", ScatterKind::Value));
  set_kernel("scatter_add", kCUDA, scatter_kernel("scatter_add", ScatterKind::Add));
  set_kernel("scatter_reduce", kCUDA, scatter_kernel("scatter_reduce", ScatterKind::Reduce));
  set_kernel("index_add", kCUDA, index_source_kernel("index_add", ScatterOp::Sum));
  set_kernel("index_copy", kCUDA, index_source_kernel("index_copy", ScatterOp::Assign));
  set_kernel("index_fill", kCUDA, index_fill);
  set_kernel("index", kCUDA, advanced_index);
  set_kernel("index_put", kCUDA, index_put);
  set_kernel("take", kCUDA, take);
  set_kernel("put", kCUDA, put);
}

}  // namespace kiln::cuda
