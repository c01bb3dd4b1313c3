#pragma once
// The row path of the scatter/gather kernels (Note [Row path] in scatter.h): detection of
// row-wise indices, the counting sort by destination, and the row loops. Included by
// scatter.cpp only.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "kiln/backend/cpu/parallel.h"
#include "kiln/backend/cpu/scatter.h"

namespace kiln::cpu {

// A tensor's geometry in elements; a 0-dim tensor is seen as one element of shape [1].
struct Geometry {
  std::vector<int64_t> sizes, strides;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return n;
  }
};

// An index that moves whole rows: row e of the index's iteration space goes to (or comes from)
// row idx[e] along `dim`; a row has F elements, contiguous in every operand.
struct RowPlan {
  int64_t E = 0, F = 1;
  std::vector<int64_t> idx;
};

// The row plan of `index` (geometry ig) along `dim`, or nullopt when the index is not constant
// along the dims after `dim`, when a dim before `dim` has more than one element, or when an
// operand's rows (strides given for the index's sizes) are not contiguous. dest_rows > 0: the
// rows are scattered into that many destinations (the counting sort needs a bound).
std::optional<RowPlan> row_plan(const Geometry& ig, const int64_t* index, int64_t dim,
                                const std::vector<const std::vector<int64_t>*>& operands,
                                int64_t dest_rows = 0);

// Edges bucketed by destination: the rows sent to destination n are order[start[n]] ..
// order[start[n + 1] - 1], in increasing order (a stable sort, so results are deterministic).
struct Buckets {
  std::vector<int64_t> start, order;
};
Buckets bucket_by_destination(const std::vector<int64_t>& idx, int64_t dest_rows);

// Splits destinations [0, dest_rows) into ranges holding about the same number of edges.
std::vector<int64_t> balanced_ranges(const Buckets& b, int64_t dest_rows, int64_t tasks);

template <class T, ScatterOp OP>
struct RowReduce {
  static T identity() {
    if constexpr (OP == ScatterOp::Prod) {
      return T(1);
    } else if constexpr (OP == ScatterOp::Max) {
      return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::lowest();
    } else if constexpr (OP == ScatterOp::Min) {
      return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::max();
    } else {
      return T(0);
    }
  }
  // amax/amin propagate NaN (b != b is false for integers).
  static T combine(T a, T b) {
    if constexpr (OP == ScatterOp::Assign) {
      return b;
    } else if constexpr (OP == ScatterOp::Sum || OP == ScatterOp::Mean) {
      return a + b;
    } else if constexpr (OP == ScatterOp::Prod) {
      return a * b;
    } else if constexpr (OP == ScatterOp::Max) {
      return (b > a || b != b) ? b : a;
    } else {
      return (b < a || b != b) ? b : a;
    }
  }
};

// The mean of a sum over n elements; integers round down, as PyTorch's floor division.
template <class T>
T divide_mean(T sum, int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    return sum / static_cast<T>(n);
  } else {
    T q = sum / static_cast<T>(n);
    if (sum % static_cast<T>(n) != 0 && sum < 0) --q;
    return q;
  }
}

template <class U>
void gather_rows(U* out, const U* self, const RowPlan& p, int64_t self_row_stride) {
  const size_t bytes = static_cast<size_t>(p.F) * sizeof(U);
  parallel_for(0, p.E, std::max<int64_t>(1, kParallelGrain / p.F), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      std::memcpy(out + r * p.F, self + p.idx[r] * self_row_stride, bytes);
  });
}

// dst[f] = combine(dst[f], src[f]): kept out of line so that the compiler vectorises along the
// row (inlined into the edge loop, it vectorises across edges with gathers instead).
template <class T, ScatterOp OP>
[[gnu::noinline]] void combine_row(T* __restrict dst, const T* __restrict src, int64_t F) {
  for (int64_t f = 0; f < F; ++f) dst[f] = RowReduce<T, OP>::combine(dst[f], src[f]);
}

// Source rows are read in destination order, i.e. at random: fetch a row a few edges ahead.
inline void prefetch_row(const void* row, int64_t bytes) {
  const char* p = static_cast<const char*>(row);
  for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b);
}

// Destination row `dst` reduced with the source rows `edges[0..n)`; rows up to `ahead_end` (the
// edges of the next destinations) are prefetched.
template <class T, ScatterOp OP>
void reduce_row(T* dst, const T* src, int64_t src_row_stride, const int64_t* edges, int64_t n,
                const int64_t* ahead_end, int64_t F, bool include_self) {
  constexpr int64_t kAhead = 4;
  const int64_t bytes = F * static_cast<int64_t>(sizeof(T));
  int64_t k = 0;
  if constexpr (OP == ScatterOp::Assign) {
    k = n - 1;  // the last write wins, as in index order
  } else if (!include_self) {
    std::memcpy(dst, src + edges[0] * src_row_stride, static_cast<size_t>(bytes));
    k = 1;
  }
  for (; k < n; ++k) {
    if (edges + k + kAhead < ahead_end)
      prefetch_row(src + edges[k + kAhead] * src_row_stride, bytes);
    combine_row<T, OP>(dst, src + edges[k] * src_row_stride, F);
  }
  if constexpr (OP == ScatterOp::Mean) {
    const int64_t count = n + (include_self ? 1 : 0);
    for (int64_t f = 0; f < F; ++f) dst[f] = divide_mean(dst[f], count);
  }
}

template <class T, ScatterOp OP>
void scatter_rows(T* out, const T* src, const RowPlan& p, int64_t out_row_stride,
                  int64_t src_row_stride, int64_t dest_rows, bool include_self) {
  const Buckets b = bucket_by_destination(p.idx, dest_rows);
  const std::vector<int64_t> ranges = balanced_ranges(b, dest_rows, 4 * num_threads());
  const int64_t tasks = static_cast<int64_t>(ranges.size()) - 1;
  parallel_for(0, tasks, 1, [&](int64_t t0, int64_t t1) {
    const int64_t* end = b.order.data() + b.start[ranges[t1]];
    for (int64_t n = ranges[t0]; n < ranges[t1]; ++n) {
      const int64_t count = b.start[n + 1] - b.start[n];
      if (count == 0) continue;
      reduce_row<T, OP>(out + n * out_row_stride, src, src_row_stride, &b.order[b.start[n]], count,
                        end, p.F, include_self);
    }
  });
}

}  // namespace kiln::cpu
