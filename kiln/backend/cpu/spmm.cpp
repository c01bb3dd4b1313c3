#include "kiln/backend/cpu/spmm.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kiln/backend/cpu/parallel.h"
#include "kiln/backend/cpu/vec_math.h"

namespace kiln::cpu {
namespace {

// Entries [b, e) of a row (e > b) folded into o[f0, F) and their entry numbers into a[f0, F):
// o = max over entries j of sign * values[j] * dense[col[j]], a = the first j reaching it. The
// compiler vectorises over the features (a branch-free select through a lane mask as wide as the
// index: it does not vectorise a conditional assignment of the index), but o and a go through
// memory on every entry.
template <class T, class I>
void extreme_features(const int64_t* col, const T* values, const T* dense, int64_t b, int64_t e,
                      int64_t F, int64_t f0, T sign, T* __restrict o, I* __restrict a) {
  const T* x0 = dense + col[b] * F;
  for (int64_t f = f0; f < F; ++f) o[f] = sign * values[b] * x0[f], a[f] = static_cast<I>(b);
  for (int64_t j = b + 1; j < e; ++j) {
    const T v = sign * values[j];
    const T* __restrict x = dense + col[j] * F;
    const I jj = static_cast<I>(j);
    for (int64_t f = f0; f < F; ++f) {
      const T c = v * x[f], best = o[f];
      const I take = -static_cast<I>(c > best);
      o[f] = c > best ? c : best;
      a[f] = (jj & take) | (a[f] & ~take);
    }
  }
}

// The same for float values and int32 entry numbers on features [f0, f0 + kBlock), with the
// running extremes and entry numbers held in registers across the entries.
constexpr int64_t kBlockVectors = 4, kBlock = kBlockVectors * kVec;
void extreme_block(const int64_t* col, const float* values, const float* dense, int64_t b,
                   int64_t e, int64_t F, int64_t f0, float sign, float* o, int32_t* a) {
  fvec m[kBlockVectors];
  ivec arg[kBlockVectors];
  const fvec v0 = splat(sign * values[b]);
  const float* x0 = dense + col[b] * F + f0;
  for (int64_t k = 0; k < kBlockVectors; ++k) {
    m[k] = v0 * load_vec(x0 + k * kVec);
    arg[k] = ivec{} + static_cast<int32_t>(b);
  }
  for (int64_t j = b + 1; j < e; ++j) {
    const fvec v = splat(sign * values[j]);
    const float* x = dense + col[j] * F + f0;
    const ivec jj = ivec{} + static_cast<int32_t>(j);
    for (int64_t k = 0; k < kBlockVectors; ++k) {
      const fvec c = v * load_vec(x + k * kVec);
      const ivec greater = c > m[k];
      m[k] = greater ? c : m[k];
      arg[k] = greater ? jj : arg[k];
    }
  }
  for (int64_t k = 0; k < kBlockVectors; ++k) {
    store_vec(o + f0 + k * kVec, m[k]);
    std::memcpy(a + f0 + k * kVec, &arg[k], sizeof(ivec));
  }
}

// Rows are independent, so threads own disjoint output rows (no atomics, deterministic); the
// inner loops run over the contiguous feature dim.
template <class T, class I>
void spmm_rows(const int64_t* crow, const int64_t* col, const T* values, const T* dense,
               int64_t rows, int64_t F, SpmmReduce reduce, T* out, I* arg) {
  const int64_t nnz = crow[rows];
  const int64_t grain = std::max<int64_t>(
      1, kParallelGrain / std::max<int64_t>(1, F + nnz / std::max<int64_t>(rows, 1) * F));
  parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T* __restrict o = out + i * F;
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
      I* __restrict a = arg + i * F;
      if (e == b) {
        std::fill(o, o + F, T(0));
        std::fill(a, a + F, I(-1));
        continue;
      }
      // The maximum of -(v * x) is minus the minimum, so one loop serves amax and amin.
      const T sign = reduce == SpmmReduce::Max ? T(1) : T(-1);
      int64_t f0 = 0;
      if constexpr (std::is_same_v<T, float> && std::is_same_v<I, int32_t>) {
        for (; f0 + kBlock <= F; f0 += kBlock)
          extreme_block(col, values, dense, b, e, F, f0, sign, o, a);
      }
      if (f0 < F) extreme_features(col, values, dense, b, e, F, f0, sign, o, a);
      if (sign < 0)
        for (int64_t f = 0; f < F; ++f) o[f] = -o[f];
    }
  });
}

}  // namespace

void spmm(const Tensor& crow, const Tensor& col, const Tensor& values, const Tensor& dense,
          SpmmReduce reduce, Tensor& out, Tensor& arg) {
  const int64_t rows = out.size(0), F = out.size(1);
  const bool has_arg = arg.defined() && arg.numel() > 0;
  auto run = [&]<class T>() {
    const int64_t* cp = crow.data_ptr<int64_t>();
    const int64_t* kp = col.data_ptr<int64_t>();
    if (has_arg && arg.dtype() == kInt32) {
      spmm_rows(cp, kp, values.data_ptr<T>(), dense.data_ptr<T>(), rows, F, reduce,
                out.data_ptr<T>(), arg.data_ptr<int32_t>());
    } else {
      spmm_rows(cp, kp, values.data_ptr<T>(), dense.data_ptr<T>(), rows, F, reduce,
                out.data_ptr<T>(), has_arg ? arg.data_ptr<int64_t>() : nullptr);
    }
  };
  if (out.dtype() == kFloat64) {
    run.template operator()<double>();
  } else {
    run.template operator()<float>();
  }
}

}  // namespace kiln::cpu
