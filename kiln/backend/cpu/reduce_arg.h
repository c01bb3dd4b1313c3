#pragma once
// Index-tracking reductions along one dim (max/min with indices, argmax/argmin): the first
// extreme value wins ties, and NaN counts as the extreme (the first NaN is returned).
#include <algorithm>
#include <vector>

#include "kiln/backend/cpu/reduce.h"

namespace kiln::cpu {

template <bool kMax, class C>
inline bool replaces(C v, C best) {
  if constexpr (std::is_floating_point_v<C>) {
    if (v != v) return best == best;
  }
  return kMax ? v > best : v < best;
}

// For every position o (row-major over the dims other than `dim`), indices[o] = the position
// along `dim` of the extreme element and, when `values` is given, values[o] = that element.
// x must have a non-empty `dim` (a 0-dim x counts as one element).
template <class T, bool kMax>
void arg_reduce(const Tensor& x, int64_t dim, T* values, int64_t* indices) {
  using C = std::conditional_t<std::is_same_v<T, bool>, uint8_t, compute_t<T>>;
  std::vector<int64_t> sizes, strides;
  int64_t R = 1, s = 1, outputs = 1;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const int64_t n = x.impl()->sizes()[d];
    const int64_t st = x.impl()->strides()[d];
    if (d == dim) {
      R = n;
      s = st;
    } else {
      sizes.push_back(n);
      strides.push_back(st);
      outputs *= n;
    }
  }
  if (outputs == 0) return;
  const T* data = static_cast<const T*>(x.data_ptr());
  // Columns: the innermost other dim is dense, so rows along `dim` are compared a block of
  // columns at a time (reads stay sequential).
  if (!sizes.empty() && strides.back() == 1 && s != 1 && sizes.back() > 1) {
    const int64_t M = sizes.back();
    std::vector<int64_t> osizes(sizes.begin(), sizes.end() - 1);
    std::vector<int64_t> ostrides(strides.begin(), strides.end() - 1);
    const int64_t chunks = (M + kReduceColumns - 1) / kReduceColumns;
    const int64_t items = (outputs / M) * chunks;
    parallel_for(0, items, std::max<int64_t>(1, kParallelGrain / (R * kReduceColumns)),
                 [&](int64_t begin, int64_t end) {
                   std::vector<C> best(kReduceColumns);
                   std::vector<int64_t> at(kReduceColumns);
                   for (int64_t item = begin; item < end; ++item) {
                     const int64_t k = item / chunks, j0 = (item % chunks) * kReduceColumns;
                     const int64_t w = std::min(kReduceColumns, M - j0);
                     const T* base = data + OffsetWalker(osizes, ostrides, k).offset() + j0;
                     for (int64_t j = 0; j < w; ++j) {
                       best[j] = static_cast<C>(base[j]);
                       at[j] = 0;
                     }
                     for (int64_t i = 1; i < R; ++i) {
                       const T* row = base + i * s;
                       for (int64_t j = 0; j < w; ++j) {
                         const C v = static_cast<C>(row[j]);
                         if (replaces<kMax>(v, best[j])) {
                           best[j] = v;
                           at[j] = i;
                         }
                       }
                     }
                     for (int64_t j = 0; j < w; ++j) {
                       indices[k * M + j0 + j] = at[j];
                       if (values) values[k * M + j0 + j] = static_cast<T>(best[j]);
                     }
                   }
                 });
    return;
  }
  parallel_for(0, outputs, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(R, 1)),
               [&](int64_t begin, int64_t end) {
                 OffsetWalker w(sizes, strides, begin);
                 for (int64_t o = begin; o < end; ++o, w.next()) {
                   const T* p = data + w.offset();
                   C best = static_cast<C>(p[0]);
                   int64_t at = 0;
                   for (int64_t i = 1; i < R; ++i) {
                     const C v = static_cast<C>(p[i * s]);
                     if (replaces<kMax>(v, best)) {
                       best = v;
                       at = i;
                     }
                   }
                   indices[o] = at;
                   if (values) values[o] = static_cast<T>(best);
                 }
               });
}

}  // namespace kiln::cpu
