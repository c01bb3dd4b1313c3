#include "kiln/backend/cpu/scatter.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/loops.h"
#include "kiln/backend/cpu/parallel.h"
#include "kiln/backend/cpu/scatter_rows.h"
#include "kiln/core/error.h"

namespace kiln::cpu {

ScatterOp scatter_op_from_name(const char* op, const std::string& reduce) {
  if (reduce == "sum" || reduce == "add") return ScatterOp::Sum;
  if (reduce == "prod" || reduce == "multiply") return ScatterOp::Prod;
  if (reduce == "mean") return ScatterOp::Mean;
  if (reduce == "amax") return ScatterOp::Max;
  if (reduce == "amin") return ScatterOp::Min;
  KILN_FAIL(op,
            ": reduce argument must be either sum, prod, mean, amax or amin (or add, "
            "multiply for scatter), got ",
            reduce);
}

namespace {

Geometry geometry(const Tensor& t) {
  if (t.dim() == 0) return {{1}, {0}};
  return {t.sizes().vec(), t.strides().vec()};
}
Geometry geometry(const Tensor& t, int64_t nd) {  // 0-dim seen with nd dims of size 1
  if (t.dim() == 0) return {std::vector<int64_t>(nd, 1), std::vector<int64_t>(nd, 0)};
  return geometry(t);
}

// Calls f(offsets, len) for each line of `sizes` along line_dim, in parallel; offsets[k] is the
// start of the line in operand k (strides[k] in elements).
template <size_t N, class F>
void for_each_line(const std::vector<int64_t>& sizes, int64_t line_dim,
                   const std::array<const std::vector<int64_t>*, N>& strides, const F& f) {
  const int64_t nd = static_cast<int64_t>(sizes.size());
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0) return;
  const int64_t len = sizes[line_dim];
  const int64_t lines = numel / len;
  parallel_for(0, lines, std::max<int64_t>(1, kParallelGrain / len), [&](int64_t b, int64_t e) {
    for (int64_t l = b; l < e; ++l) {
      std::array<int64_t, N> off{};
      int64_t rem = l;
      for (int64_t d = nd - 1; d >= 0; --d) {
        if (d == line_dim) continue;
        const int64_t c = rem % sizes[d];
        rem /= sizes[d];
        for (size_t k = 0; k < N; ++k) off[k] += c * (*strides[k])[d];
      }
      f(off, len);
    }
  });
}

template <class I>
void check_range_typed(const char* op, const Tensor& index, int64_t dim, int64_t size,
                       bool allow_negative) {
  Geometry g = geometry(index);
  for (size_t d = 0; d < g.sizes.size(); ++d)
    if (g.strides[d] == 0) g.sizes[d] = 1;  // expanded dims repeat the same values
  const I* p = static_cast<const I*>(index.data_ptr());
  const int64_t lo = allow_negative ? -size : 0;
  std::atomic<bool> bad{false};
  const int64_t last = static_cast<int64_t>(g.sizes.size()) - 1;
  const std::array<const std::vector<int64_t>*, 1> st{&g.strides};
  for_each_line<1>(g.sizes, last, st, [&](const std::array<int64_t, 1>& off, int64_t len) {
    const I* q = p + off[0];
    const int64_t s = g.strides[last];
    bool any = false;
    for (int64_t k = 0; k < len; ++k) {
      const int64_t v = q[k * s];
      any |= (v < lo) | (v >= size);
    }
    if (any) bad.store(true, std::memory_order_relaxed);
  });
  if (!bad.load()) return;
  // The first bad value in row-major order (a serial scan: this path only builds the message).
  int64_t first = 0;
  const int64_t n = g.numel();
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t off = 0, rem = flat;
    for (int64_t d = last; d >= 0; --d) {
      off += (rem % g.sizes[d]) * g.strides[d];
      rem /= g.sizes[d];
    }
    const int64_t v = p[off];
    if (v < lo || v >= size) {
      first = v;
      break;
    }
  }
  KILN_FAIL(op, ": index ", first, " is out of bounds for dimension ", dim, " with size ", size,
            " (valid range: ", lo, " <= index < ", size, ")");
}

template <class U>
void gather_typed(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index) {
  Geometry ig = geometry(index);
  const int64_t nd = static_cast<int64_t>(ig.sizes.size());
  Geometry sg = geometry(self, nd);
  const std::vector<int64_t> ost = kiln::contiguous_strides(ig.sizes);
  const int64_t sdim = sg.strides[dim];
  sg.strides[dim] = 0;
  U* o = static_cast<U*>(out.data_ptr());
  const U* x = static_cast<const U*>(self.data_ptr());
  const int64_t* idx = index.data_ptr<int64_t>();
  if (auto rows = row_plan(ig, idx, dim, {&ost, &sg.strides})) {
    gather_rows<U>(o, x, *rows, sdim);
    return;
  }
  const int64_t last = nd - 1;
  const std::array<const std::vector<int64_t>*, 3> st{&ost, &sg.strides, &ig.strides};
  for_each_line<3>(ig.sizes, last, st, [&](const std::array<int64_t, 3>& off, int64_t len) {
    const int64_t os = ost[last], xs = sg.strides[last], is = ig.strides[last];
    for (int64_t k = 0; k < len; ++k)
      o[off[0] + k * os] = x[off[1] + k * xs + idx[off[2] + k * is] * sdim];
  });
}

// Lines along `dim` own disjoint positions of out (their other coordinates differ), so lines
// run in parallel and the writes within a line happen in index order.
template <class T, ScatterOp OP>
void scatter_lines(T* out, const Geometry& og, int64_t dim, const Tensor& index, const T* src,
                   const Geometry& srcg, bool include_self) {
  Geometry ig = geometry(index);
  std::vector<int64_t> ost = og.strides;
  const int64_t odim = ost[dim];
  ost[dim] = 0;
  const int64_t* idx = index.data_ptr<int64_t>();
  std::vector<int32_t> counts;
  if constexpr (OP == ScatterOp::Mean) counts.assign(static_cast<size_t>(og.numel()), 0);
  const std::array<const std::vector<int64_t>*, 3> st{&ost, &ig.strides, &srcg.strides};
  const int64_t is = ig.strides[dim], ss = srcg.strides[dim];
  for_each_line<3>(ig.sizes, dim, st, [&](const std::array<int64_t, 3>& off, int64_t len) {
    T* o = out + off[0];
    const int64_t* ix = idx + off[1];
    const T* s = src + off[2];
    if (!include_self)
      for (int64_t k = 0; k < len; ++k) o[ix[k * is] * odim] = RowReduce<T, OP>::identity();
    for (int64_t k = 0; k < len; ++k) {
      T& dst = o[ix[k * is] * odim];
      dst = RowReduce<T, OP>::combine(dst, s[k * ss]);
      if constexpr (OP == ScatterOp::Mean) ++counts[&dst - out];
    }
    if constexpr (OP == ScatterOp::Mean) {
      for (int64_t k = 0; k < len; ++k) {
        T& dst = o[ix[k * is] * odim];
        int32_t& c = counts[&dst - out];
        if (c == 0) continue;
        dst = divide_mean(dst, c + (include_self ? 1 : 0));
        c = 0;
      }
    }
  });
}

template <class T, ScatterOp OP>
void scatter_typed(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                   const T* value, bool include_self) {
  const int64_t nd = std::max<int64_t>(index.dim(), 1);
  Geometry og = geometry(out, nd);
  Geometry srcg = src.defined()
                      ? geometry(src, nd)
                      : Geometry{std::vector<int64_t>(nd, 1), std::vector<int64_t>(nd, 0)};
  T* o = static_cast<T*>(out.data_ptr());
  const T* s = src.defined() ? static_cast<const T*>(src.data_ptr()) : value;
  Geometry ig = geometry(index);
  const int64_t odim = og.strides[dim];
  if (src.defined()) {
    if (auto rows = row_plan(ig, index.data_ptr<int64_t>(), dim, {&og.strides, &srcg.strides},
                             og.sizes[dim])) {
      scatter_rows<T, OP>(o, s, *rows, odim, srcg.strides[dim], og.sizes[dim], include_self);
      return;
    }
  }
  scatter_lines<T, OP>(o, og, dim, index, s, srcg, include_self);
}

template <ScatterOp OP, class T>
void run_reduce(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                const Scalar& value, bool include_self) {
  const T v = value.to<T>();
  scatter_typed<T, OP>(out, dim, index, src, &v, include_self);
}

template <class T>
void reduce_native(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                   const Scalar& value, ScatterOp op, bool include_self) {
  switch (op) {
    case ScatterOp::Sum:
      return run_reduce<ScatterOp::Sum, T>(out, dim, index, src, value, include_self);
    case ScatterOp::Prod:
      return run_reduce<ScatterOp::Prod, T>(out, dim, index, src, value, include_self);
    case ScatterOp::Mean:
      return run_reduce<ScatterOp::Mean, T>(out, dim, index, src, value, include_self);
    case ScatterOp::Max:
      return run_reduce<ScatterOp::Max, T>(out, dim, index, src, value, include_self);
    case ScatterOp::Min:
      return run_reduce<ScatterOp::Min, T>(out, dim, index, src, value, include_self);
    case ScatterOp::Assign:
      break;
  }
  KILN_FAIL("internal: scatter: unexpected reduction");
}

// The dtype reductions compute in: float (also for float16/bfloat16), double, int64.
ScalarType reduce_dtype(const char* op, ScalarType t) {
  KILN_CHECK(t != kBool, op, ": reductions are not supported for dtype bool");
  if (t == kFloat64) return kFloat64;
  if (is_floating_point(t)) return kFloat32;
  return kInt64;
}

Tensor converted(const Tensor& t, ScalarType dt) {
  if (!t.defined() || t.dtype() == dt) return t;
  Tensor c = empty_buffer(t.sym_sizes(), dt, t.device());
  copy(c, t);
  return c;
}

template <class U>
U bits_of(const Scalar& value, ScalarType dt) {
  U bits{};
  visit_all(dt, "scatter", [&](auto tag) {
    using T = decltype(tag);
    // Only the dtype whose width is U's runs; the others must not compile a wider copy.
    if constexpr (sizeof(T) == sizeof(U)) {
      const T v = value.to<T>();
      std::memcpy(&bits, &v, sizeof(T));
    }
  });
  return bits;
}

template <class U>
void assign_typed(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                  const Scalar& value) {
  const U v = src.defined() ? U{} : bits_of<U>(value, out.dtype());
  scatter_typed<U, ScatterOp::Assign>(out, dim, index, src, &v, true);
}

}  // namespace

void check_index_range(const char* op, const Tensor& index, int64_t dim, int64_t size,
                       bool allow_negative) {
  if (index.numel() == 0) return;
  if (index.dtype() == kInt32)
    return check_range_typed<int32_t>(op, index, dim, size, allow_negative);
  KILN_CHECK(index.dtype() == kInt64, op, ": expected an int64 or int32 index, got ",
             index.dtype());
  check_range_typed<int64_t>(op, index, dim, size, allow_negative);
}

void gather(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index) {
  if (out.numel() == 0) return;
  KILN_CHECK(out.dtype() == self.dtype() && out.is_contiguous() && index.dtype() == kInt64,
             "internal: cpu::gather expects a contiguous output of the input's dtype and an int64 "
             "index");
  switch (out.element_size()) {
    case 1:
      return gather_typed<uint8_t>(out, self, dim, index);
    case 2:
      return gather_typed<uint16_t>(out, self, dim, index);
    case 4:
      return gather_typed<uint32_t>(out, self, dim, index);
    default:
      return gather_typed<uint64_t>(out, self, dim, index);
  }
}

void scatter(const char* caller, const Tensor& out, int64_t dim, const Tensor& index,
             const Tensor& src, const Scalar& value, ScatterOp op, bool include_self) {
  if (index.numel() == 0 || out.numel() == 0) return;
  KILN_CHECK(out.is_contiguous() && index.dtype() == kInt64,
             "internal: cpu::scatter expects a contiguous output and an int64 index");
  if (op == ScatterOp::Assign) {
    Tensor s = converted(src, out.dtype());
    switch (out.element_size()) {
      case 1:
        return assign_typed<uint8_t>(out, dim, index, s, value);
      case 2:
        return assign_typed<uint16_t>(out, dim, index, s, value);
      case 4:
        return assign_typed<uint32_t>(out, dim, index, s, value);
      default:
        return assign_typed<uint64_t>(out, dim, index, s, value);
    }
  }
  const ScalarType native = reduce_dtype(caller, out.dtype());
  Tensor work = converted(out, native);
  Tensor s = converted(src, native);
  if (native == kFloat32) reduce_native<float>(work, dim, index, s, value, op, include_self);
  if (native == kFloat64) reduce_native<double>(work, dim, index, s, value, op, include_self);
  if (native == kInt64) reduce_native<int64_t>(work, dim, index, s, value, op, include_self);
  if (work.data_ptr() != out.data_ptr()) copy(out, work);
}

}  // namespace kiln::cpu
