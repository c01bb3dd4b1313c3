#pragma once
// Inclusive scans along one dim (cumsum, cumprod) of a contiguous tensor. The running value is
// kept in Acc (double for floating types, int64 for integers), so each output is rounded once.
#include <algorithm>
#include <vector>

#include "kiln/backend/cpu/reduce.h"

namespace kiln::cpu {

// out[..., i, ...] = op(out[..., i-1, ...], x[..., i, ...]) along `dim`; x and out are contiguous
// with the same shape and dtype T.
template <class T, class Acc, class Op>
void scan(const Tensor& x, int64_t dim, T* out, Acc init, Op op) {
  int64_t outer = 1, R = 1, inner = 1;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const int64_t n = x.impl()->sizes()[d];
    if (d < dim)
      outer *= n;
    else if (d == dim)
      R = n;
    else
      inner *= n;
  }
  if (outer * R * inner == 0) return;
  const T* in = static_cast<const T*>(x.data_ptr());
  using C = compute_t<T>;
  if (inner == 1) {
    parallel_for(0, outer, std::max<int64_t>(1, kParallelGrain / R), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        Acc acc = init;
        for (int64_t i = o * R; i < (o + 1) * R; ++i) {
          acc = op(acc, static_cast<Acc>(static_cast<C>(in[i])));
          out[i] = static_cast<T>(acc);
        }
      }
    });
    return;
  }
  // Rows of `inner` elements are combined a block of columns at a time (vectorised along them).
  const int64_t chunks = (inner + kReduceColumns - 1) / kReduceColumns;
  parallel_for(0, outer * chunks, std::max<int64_t>(1, kParallelGrain / (R * kReduceColumns)),
               [&](int64_t b, int64_t e) {
                 std::vector<Acc> acc(kReduceColumns);
                 for (int64_t item = b; item < e; ++item) {
                   const int64_t o = item / chunks, j0 = (item % chunks) * kReduceColumns;
                   const int64_t w = std::min(kReduceColumns, inner - j0);
                   std::fill(acc.begin(), acc.begin() + w, init);
                   for (int64_t i = 0; i < R; ++i) {
                     const int64_t base = (o * R + i) * inner + j0;
                     for (int64_t j = 0; j < w; ++j) {
                       acc[j] = op(acc[j], static_cast<Acc>(static_cast<C>(in[base + j])));
                       out[base + j] = static_cast<T>(acc[j]);
                     }
                   }
                 }
               });
}

}  // namespace kiln::cpu
