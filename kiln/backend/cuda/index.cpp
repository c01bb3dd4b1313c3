#include "kiln/backend/cuda/index.h"

#include <algorithm>
#include <cstring>
#include <string_view>

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

using compiler::storage_type;

constexpr int kMaxDims = 8;
constexpr unsigned kThreads = 256;

std::string header(const std::string& types) {
  return "#include <cstdint>\n\n#include \"kiln/core/half.h\"\n" +
         std::string(kDeviceAssertSource) + types;
}

constexpr const char* kGather = R"cuda(
struct GatherArgs {
  const T* self;
  T* out;
  const Index* index;
  int64_t sizes[8];
  int64_t out_strides[8];
  int64_t self_strides[8];
  int64_t index_strides[8];
  int64_t ndim, dim, dim_size, numel;
};

extern "C" __global__ void KERNEL(const GatherArgs a, KilnDeviceAssert* record,
                                  unsigned long long launch) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < a.numel;
       i += step) {
    int64_t r = i, o = 0, s = 0, x = 0;
    for (int d = static_cast<int>(a.ndim) - 1; d >= 0; --d) {
      const int64_t size = a.sizes[d], q = r / size, c = r - q * size;
      r = q;
      o += c * a.out_strides[d];
      x += c * a.index_strides[d];
      if (d != a.dim) s += c * a.self_strides[d];
    }
    const int64_t v = static_cast<int64_t>(a.index[x]);
    a.out[o] = KILN_DEVICE_CHECK(v >= 0 && v < a.dim_size, record, launch,
                                 "index {value} is out of bounds for dimension {dim} with size {bound}",
                                 v, a.dim_size, static_cast<int>(a.dim))
                   ? a.self[s + v * a.self_strides[a.dim]]
                   : T(0);
  }
}
)cuda";

// Whole rows: out row r = self row index[r], moved in chunks of Chunk (1 to 16 bytes).
constexpr const char* kGatherRows = R"cuda(
template <class I>
__device__ void copy_rows(const Chunk* self, Chunk* out, const Index* index, I n, I chunks,
                          int64_t self_row, int64_t index_step, int64_t rows,
                          KilnDeviceAssert* record, unsigned long long launch) {
  const I step = static_cast<I>(blockDim.x) * gridDim.x;
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const I r = i / chunks, c = i - r * chunks;
    const int64_t v = static_cast<int64_t>(index[r * index_step]);
    out[i] = KILN_DEVICE_CHECK(v >= 0 && v < rows, record, launch,
                               "index {value} is out of bounds for dimension {dim} with size {bound}",
                               v, rows, 0)
                 ? self[v * self_row + c]
                 : Chunk{};
  }
}

extern "C" __global__ void KERNEL(const Chunk* self, Chunk* out, const Index* index, int64_t n,
                                  int64_t chunks, int64_t self_row, int64_t index_step,
                                  int64_t rows, KilnDeviceAssert* record,
                                  unsigned long long launch) {
  if (n <= 0x7fffffff)
    copy_rows<unsigned int>(self, out, index, static_cast<unsigned int>(n),
                            static_cast<unsigned int>(chunks), self_row, index_step, rows, record,
                            launch);
  else
    copy_rows<int64_t>(self, out, index, n, chunks, self_row, index_step, rows, record, launch);
}
)cuda";

constexpr const char* kEmbeddingBackward = R"cuda(
extern "C" __global__ void KERNEL(const T* grad, const Index* idx, T* out, int64_t k, int64_t d,
                                  int64_t rows, int64_t padding_idx, KilnDeviceAssert* record,
                                  unsigned long long launch) {
  const int64_t n = k * d, step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t row = i / d, col = i - row * d;
    const int64_t v = static_cast<int64_t>(idx[row]);
    if (!KILN_DEVICE_CHECK(v >= 0 && v < rows, record, launch,
                           "index {value} is out of range for {bound} embeddings", v, rows, 0))
      continue;
    if (v != padding_idx) atomicAdd(out + v * d + col, grad[i]);
  }
}
)cuda";

constexpr const char* kNllLoss = R"cuda(
extern "C" __global__ void KERNEL(const X* x, const Target* target, const X* weight, Acc* per,
                                  Acc* wt, int64_t k, int64_t classes, int64_t inner,
                                  int64_t ignore, KilnDeviceAssert* record,
                                  unsigned long long launch) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < k; j += step) {
    const int64_t t = static_cast<int64_t>(target[j]);
    Acc p = 0, w = 0;
    if (t != ignore && KILN_DEVICE_CHECK(t >= 0 && t < classes, record, launch,
                                         "Target {value} is out of bounds (classes: {bound})", t,
                                         classes, 1)) {
      const int64_t i = j / inner, s = j - i * inner;
      w = weight ? static_cast<Acc>(weight[t]) : Acc(1);
      p = -w * static_cast<Acc>(x[(i * classes + t) * inner + s]);
    }
    per[j] = p;
    wt[j] = w;
  }
}
)cuda";

// "kiln_<what>_<a>_<b>": the name determines the source.
std::string kernel_name(const std::string& what, std::string_view a, std::string_view b) {
  return "kiln_" + what + "_" + std::string(a) + "_" + std::string(b);
}

}  // namespace

std::string gather_source(int element_bytes, ScalarType index, const std::string& name) {
  KILN_CHECK(is_index_dtype(index), "cuda: gather indices are int32 or int64, not ", index);
  return header(std::string("using T = ") + unsigned_type(element_bytes) +
                ";\nusing Index = " + storage_type(index) + ";\n") +
         named_kernel(kGather, name);
}

std::string gather_rows_source(int chunk_bytes, ScalarType index, const std::string& name) {
  KILN_CHECK(is_index_dtype(index), "cuda: gather indices are int32 or int64, not ", index);
  const std::string chunk =
      chunk_bytes == 16 ? "struct alignas(16) Chunk {\n  unsigned long long a, b;\n};\n"
                        : std::string("using Chunk = ") + unsigned_type(chunk_bytes) + ";\n";
  return header(chunk + "using Index = " + storage_type(index) + ";\n") +
         named_kernel(kGatherRows, name);
}

std::string embedding_backward_source(ScalarType dtype, ScalarType index, const std::string& name) {
  KILN_CHECK(is_index_dtype(index) && (dtype == kFloat32 || dtype == kFloat64),
             "cuda: no embedding_backward kernel for ", dtype, " with ", index, " indices");
  return header("using T = " + storage_type(dtype) + ";\nusing Index = " + storage_type(index) +
                ";\n") +
         named_kernel(kEmbeddingBackward, name);
}

std::string nll_loss_source(ScalarType x, ScalarType target, const std::string& name) {
  KILN_CHECK(is_floating_point(x) && (is_index_dtype(target) || target == kUInt8),
             "cuda: no nll_loss kernel for ", x, " input with ", target, " targets");
  return header("using X = " + storage_type(x) + ";\nusing Target = " + storage_type(target) +
                ";\nusing Acc = " + (x == kFloat64 ? "double" : "float") + ";\n") +
         named_kernel(kNllLoss, name);
}

namespace {

// The gather kernel over out's elements: out = self with `dim` indexed by `index` (out's shape,
// any strides). False when the call does not fit it (more than 8 dims).
bool gather(const std::string& op, const Tensor& out, const Tensor& self, int64_t dim,
            const Tensor& index) {
  const int64_t nd = out.dim();
  if (nd > kMaxDims || self.dim() != nd || index.dim() != nd) return false;
  if (out.numel() == 0) return true;
  const int dev = device_of(out);
  const int bytes = static_cast<int>(out.element_size());
  std::vector<uint64_t> words = {reinterpret_cast<uintptr_t>(self.data_ptr()),
                                 reinterpret_cast<uintptr_t>(out.data_ptr()),
                                 reinterpret_cast<uintptr_t>(index.data_ptr())};
  auto push_dims = [&](auto value_at) {
    for (int64_t d = 0; d < kMaxDims; ++d)
      words.push_back(static_cast<uint64_t>(d < nd ? value_at(d) : 0));
  };
  push_dims([&](int64_t d) { return out.size(d); });
  for (const Tensor* t : {&out, &self, &index}) push_dims([&](int64_t d) { return t->stride(d); });
  for (int64_t v : {nd, dim, self.size(dim), out.numel()})
    words.push_back(static_cast<uint64_t>(v));
  const std::string name = kernel_name("gather", std::to_string(bytes), dtype_name(index.dtype()));
  const cudaKernel_t fn =
      generated_kernel(dev, name, [&] { return gather_source(bytes, index.dtype(), name); });
  AssertingLaunch check = asserting_launch(dev, op, name);
  void* params[] = {words.data(), &check.record, &check.id};
  launch_kernel(op, fn, grid_stride_blocks(dev, out.numel(), kThreads), dim3(kThreads), params);
  return true;
}

// The widest chunk (16 bytes down to 1) that divides every byte count and address given.
int chunk_bytes(std::initializer_list<uint64_t> values) {
  for (int b = 16; b > 1; b /= 2)
    if (std::all_of(values.begin(), values.end(), [b](uint64_t v) { return v % b == 0; })) return b;
  return 1;
}

// out = the rows of self (dim 0) at the positions of the 1-D index, when a row of self is dense
// and out is contiguous: each row moves in chunks of up to 16 bytes. False when that does not
// hold (the gather kernel then takes the call).
bool gather_rows(const std::string& op, const Tensor& out, const Tensor& self,
                 const Tensor& index) {
  if (self.dim() < 1 || out.dim() != self.dim() || index.dim() != 1 || !out.is_contiguous())
    return false;
  int64_t inner = 1;
  for (int64_t d = self.dim() - 1; d >= 1; --d) {
    if (self.size(d) != 1 && self.stride(d) != inner) return false;
    inner *= self.size(d);
  }
  if (out.numel() == 0) return true;
  const uint64_t elem = out.element_size();
  const int bytes = chunk_bytes({inner * elem, self.stride(0) * elem,
                                 reinterpret_cast<uintptr_t>(self.data_ptr()),
                                 reinterpret_cast<uintptr_t>(out.data_ptr())});
  const int dev = device_of(out);
  const std::string name =
      kernel_name("gather_rows", std::to_string(bytes), dtype_name(index.dtype()));
  const cudaKernel_t fn =
      generated_kernel(dev, name, [&] { return gather_rows_source(bytes, index.dtype(), name); });
  AssertingLaunch check = asserting_launch(dev, op, name);
  const void* sp = self.data_ptr();
  void* op_ = out.data_ptr();
  const void* ip = index.data_ptr();
  int64_t chunks = static_cast<int64_t>(inner * elem / bytes);
  int64_t n = index.size(0) * chunks,
          self_row = static_cast<int64_t>(self.stride(0) * elem / bytes);
  int64_t index_step = index.stride(0), rows = self.size(0);
  void* params[] = {&sp,         &op_,  &ip,           &n,       &chunks, &self_row,
                    &index_step, &rows, &check.record, &check.id};
  launch_kernel(op, fn, grid_stride_blocks(dev, n, kThreads), dim3(kThreads), params);
  return true;
}

// index with out's sizes, stepping through idx (0-dim or 1-D) along dim and standing still
// along the others.
Tensor expanded_index(const Tensor& idx, const Tensor& out, int64_t dim) {
  std::vector<int64_t> strides(out.dim(), 0);
  strides[dim] = idx.dim() == 0 ? 0 : idx.stride(0);
  return idx.as_strided(out.sizes(), strides, idx.storage_offset());
}

Tensor as_1d(const Tensor& t) { return t.dim() == 0 ? t.view({1}) : t; }

int64_t wrapped(int64_t dim, const Tensor& t) {
  const int64_t nd = std::max<int64_t>(t.dim(), 1);
  return dim < 0 ? dim + nd : dim;
}

KernelFn gather_kernel() {
  return [](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
    static const OpDef& op = get_op("gather");
    NoGradGuard no_grad;
    const Tensor &self = in[0], &index = in[1];
    if (!on_device({self, index, out[0]}, device_of(out[0])) ||
        !gather("gather", as_1d(out[0]), as_1d(self), wrapped(a.i(0), self), as_1d(index)))
      cpu_fallback(op, in, out, a);
  };
}

KernelFn index_select_kernel() {
  return [](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
    static const OpDef& op = get_op("index_select");
    NoGradGuard no_grad;
    const Tensor &self = in[0], &index = in[1];
    const int64_t dim = wrapped(a.i(0), self);
    const Tensor o = as_1d(out[0]);
    if (!on_device({self, index, out[0]}, device_of(out[0]))) return cpu_fallback(op, in, out, a);
    if (dim == 0 && gather_rows("index_select", o, as_1d(self), as_1d(index))) return;
    if (!gather("index_select", o, as_1d(self), dim, expanded_index(index, o, dim)))
      cpu_fallback(op, in, out, a);
  };
}

KernelFn embedding_kernel() {
  return [](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
    static const OpDef& op = get_op("embedding");
    const Tensor &w = in[0], &indices = in[1];
    if (!on_device({w, indices, out[0]}, device_of(out[0])) || !out[0].is_contiguous())
      return cpu_fallback(op, in, out, a);
    NoGradGuard no_grad;
    const int64_t k = indices.numel(), d = w.size(1);
    const Tensor idx = indices.reshape({k});
    const Tensor o = out[0].view({k, d});
    if (gather_rows("embedding", o, w, idx)) return;
    const Tensor expanded = idx.as_strided({k, d}, {idx.stride(0), 0}, idx.storage_offset());
    if (!gather("embedding", o, w, 0, expanded)) cpu_fallback(op, in, out, a);
  };
}

// grad (*, D), indices (*) -> out (rows, D): float32 and float64 add atomically; 16-bit grads
// accumulate in float32. scale_grad_by_freq takes the CPU fallback.
KernelFn embedding_backward_kernel() {
  return [](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
    static const OpDef& op = get_op("embedding_backward");
    const Tensor &grad = in[0], &indices = in[1];
    const ScalarType dt = out[0].dtype();
    if (!on_device({grad, indices, out[0]}, device_of(out[0])) || a.b(2) || !is_floating_point(dt))
      return cpu_fallback(op, in, out, a);
    NoGradGuard no_grad;
    const int dev = device_of(out[0]);
    const ScalarType acc = dt == kFloat64 ? kFloat64 : kFloat32;
    const int64_t k = indices.numel(), d = grad.size(-1), rows = a.i(0);
    const Tensor g = grad.reshape({k, d}).to(acc).contiguous();
    const Tensor idx = indices.reshape({k}).contiguous();
    Tensor sum = (dt == acc && out[0].is_contiguous())
                     ? out[0]
                     : empty({rows, d}, TensorOptions(acc).device(out[0].device()));
    sum.fill_(0);
    if (k * d > 0) {
      const std::string name =
          kernel_name("embedding_backward", dtype_name(acc), dtype_name(idx.dtype()));
      const cudaKernel_t fn = generated_kernel(
          dev, name, [&] { return embedding_backward_source(acc, idx.dtype(), name); });
      AssertingLaunch check = asserting_launch(dev, "embedding_backward", name);
      const void* gp = g.data_ptr();
      const void* ip = idx.data_ptr();
      void* op_ = sum.data_ptr();
      int64_t kk = k, dd = d, rr = rows, pad = a.i(1);
      void* params[] = {&gp, &ip, &op_, &kk, &dd, &rr, &pad, &check.record, &check.id};
      launch_kernel("embedding_backward", fn, grid_stride_blocks(dev, k * d, kThreads),
                    dim3(kThreads), params);
    }
    if (!sum.is_same(out[0])) out[0].copy_(sum);
  };
}

// nll_loss (inputs: x, target, weight?; attrs: reduction, ignore_index) -> loss, total_weight.
KernelFn nll_loss_kernel() {
  return [](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
    static const OpDef& op = get_op("nll_loss");
    if (!on_device({in[0], in[1], in[2], out[0], out[1]}, device_of(out[0])))
      return cpu_fallback(op, in, out, a);
    NoGradGuard no_grad;
    const Tensor x = in[0].contiguous(), target = in[1].contiguous();
    const Tensor w = in[2].defined() ? in[2].contiguous() : Tensor();
    const int dev = device_of(out[0]);
    // x is [n, classes, inner...] (or [classes]); target [n, inner...].
    const int64_t classes = x.size(x.dim() == 1 ? 0 : 1), k = target.numel();
    const int64_t n = x.dim() == 1 ? 1 : x.size(0);
    const int64_t inner = n == 0 ? 1 : k / n;
    const ScalarType acc = x.dtype() == kFloat64 ? kFloat64 : kFloat32;
    Tensor per = empty({k}, TensorOptions(acc).device(x.device()));
    Tensor wt = empty({k}, TensorOptions(acc).device(x.device()));
    if (k > 0) {
      const std::string name =
          kernel_name("nll_loss", dtype_name(x.dtype()), dtype_name(target.dtype()));
      const cudaKernel_t fn = generated_kernel(
          dev, name, [&] { return nll_loss_source(x.dtype(), target.dtype(), name); });
      AssertingLaunch check = asserting_launch(dev, "nll_loss", name);
      const void *xp = x.data_ptr(), *tp = target.data_ptr();
      const void* wp = w.defined() ? w.data_ptr() : nullptr;
      void *pp = per.data_ptr(), *wtp = wt.data_ptr();
      int64_t kk = k, cc = classes, ii = inner, ignore = a.i(1);
      void* params[] = {&xp, &tp, &wp, &pp, &wtp, &kk, &cc, &ii, &ignore, &check.record, &check.id};
      launch_kernel("nll_loss", fn, grid_stride_blocks(dev, k, kThreads), dim3(kThreads), params);
    }
    const int64_t reduction = a.i(0);  // 0 none, 1 mean, 2 sum
    const Tensor total_weight = wt.sum();
    out[1].copy_(total_weight);
    if (reduction == 0)
      out[0].copy_(per.view(in[1].sizes()));
    else
      out[0].copy_(reduction == 2 ? per.sum() : per.sum() / total_weight);
  };
}

}  // namespace

void register_index_kernels() {
  set_kernel("gather", kCUDA, gather_kernel());
  set_kernel("index_select", kCUDA, index_select_kernel());
  set_kernel("embedding", kCUDA, embedding_kernel());
  set_kernel("embedding_backward", kCUDA, embedding_backward_kernel());
  set_kernel("nll_loss", kCUDA, nll_loss_kernel());
}

}  // namespace kiln::cuda
