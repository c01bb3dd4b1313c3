#include "kiln/backend/cpu/spmm.h"

#include <algorithm>
#include <limits>

#include "kiln/backend/cpu/parallel.h"

namespace kiln::cpu {
namespace {

// Rows are independent, so threads own disjoint output rows (no atomics, deterministic); the
// inner loops run over the contiguous feature dim, which the compiler vectorises.
template <class T>
void spmm_rows(const int64_t* crow, const int64_t* col, const T* values, const T* dense,
               int64_t rows, int64_t F, SpmmReduce reduce, T* out, int64_t* arg) {
  const int64_t nnz = crow[rows];
  const int64_t grain = std::max<int64_t>(
      1, kParallelGrain / std::max<int64_t>(1, F + nnz / std::max<int64_t>(rows, 1) * F));
  parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T* o = out + i * F;
      const int64_t b = crow[i], e = crow[i + 1];
      if (reduce == SpmmReduce::Sum || reduce == SpmmReduce::Mean) {
        std::fill(o, o + F, T(0));
        for (int64_t j = b; j < e; ++j) {
          const T v = values[j];
          const T* x = dense + col[j] * F;
          for (int64_t f = 0; f < F; ++f) o[f] += v * x[f];
        }
        if (reduce == SpmmReduce::Mean && e > b) {
          const T inv = T(1) / static_cast<T>(e - b);
          for (int64_t f = 0; f < F; ++f) o[f] *= inv;
        }
        continue;
      }
      int64_t* a = arg + i * F;
      std::fill(a, a + F, int64_t{-1});
      if (e == b) {
        std::fill(o, o + F, T(0));
        continue;
      }
      const bool max = reduce == SpmmReduce::Max;
      const T* x0 = dense + col[b] * F;
      for (int64_t f = 0; f < F; ++f) o[f] = values[b] * x0[f], a[f] = b;
      for (int64_t j = b + 1; j < e; ++j) {
        const T v = values[j];
        const T* x = dense + col[j] * F;
        for (int64_t f = 0; f < F; ++f) {
          const T c = v * x[f];
          const bool better = max ? c > o[f] : c < o[f];
          o[f] = better ? c : o[f];
          a[f] = better ? j : a[f];
        }
      }
    }
  });
}

}  // namespace

void spmm(const Tensor& crow, const Tensor& col, const Tensor& values, const Tensor& dense,
          SpmmReduce reduce, Tensor& out, Tensor& arg) {
  const int64_t rows = out.size(0).guard_int(), F = out.size(1).guard_int();
  int64_t* arg_data =
      arg.defined() && arg.numel().guard_int() > 0 ? arg.data_ptr<int64_t>() : nullptr;
  if (out.dtype() == kFloat64) {
    spmm_rows(crow.data_ptr<int64_t>(), col.data_ptr<int64_t>(), values.data_ptr<double>(),
              dense.data_ptr<double>(), rows, F, reduce, out.data_ptr<double>(), arg_data);
  } else {
    spmm_rows(crow.data_ptr<int64_t>(), col.data_ptr<int64_t>(), values.data_ptr<float>(),
              dense.data_ptr<float>(), rows, F, reduce, out.data_ptr<float>(), arg_data);
  }
}

}  // namespace kiln::cpu
