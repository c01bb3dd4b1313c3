#include "kiln/backend/cuda/sort.h"

#include <algorithm>

#include "kiln/backend/cuda/device_assert.h"
#include "kiln/backend/cuda/generated_kernels.h"
#include "kiln/backend/cuda/op_util.h"
#include "kiln/compile/codegen/c_types.h"
#include "kiln/core/error.h"
#include "kiln/core/grad_mode.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/sort/util.h"

namespace kiln::cuda {
namespace {

// A block per row: the row's values (as C) and positions go to shared memory, padded to a power
// of two with positions past the row, which order last. (value, position) is a strict total
// order, so the bitonic network's result is the stable order the CPU's sort gives.
constexpr const char* kSortRows = R"cuda(
__device__ inline bool is_nan(C v) { return v != v; }

// -1, 0 or 1 as a comes before, ties with or comes after b in ascending order (NaN last).
__device__ inline int order(C a, C b) {
  const bool an = is_nan(a), bn = is_nan(b);
  if (an || bn) return an == bn ? 0 : (an ? 1 : -1);
  return a < b ? -1 : (b < a ? 1 : 0);
}

__device__ inline bool before(const C* key, const int* pos, int a, int b, int n, int descending) {
  const int pa = pos[a], pb = pos[b];
  if (pa >= n || pb >= n) return pa < pb;
  const int c = descending ? -order(key[a], key[b]) : order(key[a], key[b]);
  return c < 0 || (c == 0 && pa < pb);
}

extern "C" __global__ void KERNEL(const T* x, T* values, int64_t* indices, int64_t rows,
                                  int64_t n64, int descending, int pick) {
  extern __shared__ __align__(8) unsigned char shared[];
  const int n = static_cast<int>(n64);
  int width = 1;
  while (width < n) width <<= 1;
  int* pos = reinterpret_cast<int*>(shared);
  C* key = reinterpret_cast<C*>(shared + (width * sizeof(int) + 7) / 8 * 8);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * n64;
    for (int i = threadIdx.x; i < width; i += blockDim.x) {
      pos[i] = i;
      if (i < n) key[i] = static_cast<C>(xr[i]);
    }
    __syncthreads();
    for (int k = 2; k <= width; k <<= 1) {
      for (int j = k >> 1; j > 0; j >>= 1) {
        for (int i = threadIdx.x; i < width; i += blockDim.x) {
          const int partner = i ^ j;
          if (partner <= i) continue;
          const bool swap = (i & k) == 0 ? before(key, pos, partner, i, n, descending)
                                         : before(key, pos, i, partner, n, descending);
          if (swap) {
            const C kv = key[i];
            key[i] = key[partner];
            key[partner] = kv;
            const int pv = pos[i];
            pos[i] = pos[partner];
            pos[partner] = pv;
          }
        }
        __syncthreads();
      }
    }
    if (pick == 0) {
      for (int i = threadIdx.x; i < n; i += blockDim.x) {
        values[row * n64 + i] = xr[pos[i]];
        indices[row * n64 + i] = pos[i];
      }
    } else if (threadIdx.x == 0) {
      int at = (n - 1) / 2;
      if (is_nan(key[n - 1])) {
        at = n - 1;
        while (at > 0 && is_nan(key[at - 1])) --at;
      }
      values[row] = xr[pos[at]];
      indices[row] = pos[at];
    }
    __syncthreads();
  }
}
)cuda";

// The first position whose boundary is >= the value (right: > it), as the CPU kernel searches.
constexpr const char* kSearch = R"cuda(
extern "C" __global__ void KERNEL(const T* seq, const T* values, Index* out, int64_t total,
                                  int64_t n, int64_t seq_rows, int64_t inner, int right) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    const T* row = seq + (seq_rows <= 1 ? 0 : i / inner) * n;
    const C v = static_cast<C>(values[i]);
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      const C m = static_cast<C>(row[mid]);
      if (right ? !(m > v) : !(m >= v)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    out[i] = static_cast<Index>(lo);
  }
}
)cuda";

constexpr unsigned kThreads = 256;

bool is_sortable(ScalarType t) {
  switch (t) {
    case kFloat64:
    case kFloat32:
    case kFloat16:
    case kBFloat16:
    case kInt64:
    case kInt32:
    case kInt16:
    case kInt8:
    case kUInt8:
    case kBool:
      return true;
    default:
      return false;
  }
}

std::string value_types(ScalarType dtype) {
  KILN_CHECK(is_sortable(dtype), "cuda sort: no kernel for dtype ", dtype);
  return "using T = " + compiler::storage_type(dtype) +
         ";\nusing C = " + compiler::compute_type(dtype) + ";\n";
}

// t with dim moved last (a 0-dim tensor as one element).
Tensor dim_last(const Tensor& t, int64_t dim) {
  return t.dim() == 0 ? t.unsqueeze(0) : t.movedim(dim, -1);
}

// Sorts (pick 0) or takes the lower median of (pick 1) each row of x along dim. Returns false
// when the row is too long for one block. Values and indices come back with dim last (pick 0)
// or with the rows' shape (pick 1).
bool sort_rows(const char* op, const Tensor& x, int64_t dim, bool descending, int pick,
               Tensor& values, Tensor& indices) {
  const int64_t n = x.dim() == 0 ? 1 : x.size(dim);
  if (n > kMaxSortRow || n == 0 || !is_sortable(x.dtype())) return false;
  const Tensor xc = dim_last(x, dim).contiguous();
  const int64_t rows = xc.numel() / n;
  std::vector<int64_t> shape = xc.sizes().vec();
  if (pick == 1) shape.pop_back();
  values = empty(shape, xc.options());
  indices = empty(shape, xc.options().dtype(kInt64));
  if (rows == 0) return true;
  const int dev = device_of(x);
  const std::string name = std::string("kiln_sort_rows_") + std::string(dtype_name(x.dtype()));
  const cudaKernel_t fn = generated_kernel(
      dev, name, [&] { return kernel_source(value_types(x.dtype()), kSortRows, name); });
  const void* xp = xc.data_ptr();
  void* vp = values.data_ptr();
  void* ip = indices.data_ptr();
  int64_t r = rows, len = n;
  int desc = descending ? 1 : 0;
  void* params[] = {&xp, &vp, &ip, &r, &len, &desc, &pick};
  int64_t width = 1;
  while (width < n) width <<= 1;
  const unsigned threads = static_cast<unsigned>(std::clamp<int64_t>(width / 2, 32, 512));
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(rows, 1 << 20));
  launch_kernel(op, fn, dim3(blocks), dim3(threads), params, sort_shared_bytes(x.dtype(), n));
  return true;
}

// attrs: (stable, dim, descending)
void sort(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  static const OpDef& op = get_op("sort");
  NoGradGuard no_grad;
  const Tensor& x = in[0];
  if (x.numel() == 0) return;
  const int64_t dim = sorting::along_dim("sort", x, a.i(1));
  Tensor values, indices;
  if (!sort_rows("sort", x, dim, a.b(2), 0, values, indices)) return cpu_fallback(op, in, out, a);
  dim_last(out[0], dim).copy_(values);
  dim_last(out[1], dim).copy_(indices);
}

// The lower median of x along dim into values and indices of the reduced shape (either keepdim).
bool median_into(const char* op, const Tensor& x, int64_t dim, const Tensor& values,
                 const Tensor& indices) {
  Tensor v, i;
  if (!sort_rows(op, x, dim, false, 1, v, i)) return false;
  values.copy_(v.reshape(values.sizes()));
  if (indices.defined()) indices.copy_(i.reshape(indices.sizes()));
  return true;
}

// attrs: (dim, keepdim)
void median_dim(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  static const OpDef& op = get_op("median_dim");
  NoGradGuard no_grad;
  const int64_t dim = sorting::along_dim("median_dim", in[0], a.i(0));
  if (!median_into("median_dim", in[0], dim, out[0], out[1])) cpu_fallback(op, in, out, a);
}

void median(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  static const OpDef& op = get_op("median");
  NoGradGuard no_grad;
  const Tensor& x = in[0];
  if (x.numel() == 0 || !median_into("median", x.reshape({x.numel()}), 0, out[0], Tensor()))
    cpu_fallback(op, in, out, a);
}

// attrs: (out_int32, right, side); the sorter, when given, takes the fallback.
void searchsorted(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  static const OpDef& op = get_op("searchsorted");
  NoGradGuard no_grad;
  const ScalarType dt = meta::result_type({in[0], in[1]});
  const bool sorter = in.size() > 2 && in[2].defined();
  if (sorter || dt == kBool || !is_sortable(dt)) return cpu_fallback(op, in, out, a);
  const Tensor& y = out[0];
  if (y.numel() == 0) return;
  const Tensor seq = in[0].to(dt).contiguous(), values = in[1].to(dt).contiguous();
  const Tensor dst = y.is_contiguous() ? y : empty(y.sizes(), y.options());
  const bool right = a.b(1) || (!a.is_none(2) && a.str(2) == "right");
  const int dev = device_of(y);
  const std::string name =
      "kiln_searchsorted_" + std::string(dtype_name(dt)) + "_" + std::string(dtype_name(y.dtype()));
  const cudaKernel_t fn =
      generated_kernel(dev, name, [&] { return search_source(dt, y.dtype(), name); });
  const void* sp = seq.data_ptr();
  const void* vp = values.data_ptr();
  void* outp = dst.data_ptr();
  int64_t total = values.numel(), n = seq.size(-1);
  int64_t seq_rows = n == 0 ? 0 : seq.numel() / n;
  int64_t inner = values.dim() == 0 ? 1 : values.size(-1);
  int r = right ? 1 : 0;
  void* params[] = {&sp, &vp, &outp, &total, &n, &seq_rows, &inner, &r};
  launch_kernel("searchsorted", fn, grid_stride_blocks(dev, total, kThreads), dim3(kThreads),
                params);
  if (!dst.is_same(y)) y.copy_(dst);
}

}  // namespace

std::string sort_rows_source(ScalarType dtype, const std::string& name) {
  return kernel_source(value_types(dtype), kSortRows, name);
}

size_t sort_shared_bytes(ScalarType dtype, int64_t n) {
  int64_t width = 1;
  while (width < n) width <<= 1;
  const int64_t key_bytes =
      compiler::is_16bit(dtype) ? 4 : static_cast<int64_t>(element_size(dtype));
  return static_cast<size_t>((width * 4 + 7) / 8 * 8 + width * key_bytes);
}

std::string search_source(ScalarType dtype, ScalarType index, const std::string& name) {
  KILN_CHECK(index == kInt32 || index == kInt64, "cuda searchsorted: index dtype ", index,
             " is not int32 or int64");
  return kernel_source(
      value_types(dtype) + "using Index = " + compiler::storage_type(index) + ";\n", kSearch, name);
}

void register_sort_kernels() {
  set_kernel("sort", kCUDA, sort);
  set_kernel("median_dim", kCUDA, median_dim);
  set_kernel("median", kCUDA, median);
  set_kernel("searchsorted", kCUDA, searchsorted);
}

}  // namespace kiln::cuda
