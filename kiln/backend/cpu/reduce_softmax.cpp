#include "kiln/backend/cpu/reduce_softmax.h"

#include <cmath>
#include <memory>
#include <vector>

#include "kiln/backend/cpu/reduce.h"
#include "kiln/backend/cpu/reduce_float_runs.h"
#include "kiln/backend/cpu/reduce_math.h"

namespace kiln::cpu {
namespace {

// Sums of exponentials run in float vectors for at most this many elements, then go to double.
constexpr int64_t kSumBlock = 1024;

// Rows of 16-bit types up to this length are widened into a float buffer.
constexpr int64_t kScratchRow = int64_t{1} << 24;

// The maximum of a row (NaN if it has one); with `widened`, the row is first stored there as
// floats. Long rows go through the run kernel's independent accumulators (a single chain of
// compare+blend per vector would serialise the row on its latency).
template <class S>
float row_max(const S* x, int64_t n, float* widened = nullptr) {
  if (widened) {
    int64_t i = 0;
    for (; i + kVec <= n; i += kVec) store_vec(widened + i, load_vec(x + i));
    for (; i < n; ++i) widened[i] = static_cast<float>(x[i]);
    return row_max(static_cast<const float*>(widened), n);
  }
  if (n >= kExtremeMinRun) return extreme_of_run<true>(x, n);
  float m = -INFINITY;
  for (int64_t i = 0; i < n; ++i) m = max_nan(m, static_cast<float>(x[i]));
  return m;
}

// One contiguous row in float vectors, given its maximum m. exp(x - m) is computed once and
// kept in `keep` (the float32 output, or a float buffer for 16-bit outputs), then rescaled;
// without one it is recomputed so that each 16-bit output is rounded once. keep may be x.
template <class S, class T>
void row_vec(const S* x, T* y, int64_t n, float m, bool log, float* keep) {
  if (log) keep = nullptr;
  int64_t i = 0;
  const fvec mx = splat(m);
  double sum = 0;
  for (i = 0; i < n;) {
    const int64_t end = std::min(n, i + kSumBlock);
    fvec sv = splat(0);
    for (; i + kVec <= end; i += kVec) {
      const fvec e = exp_vec(load_vec(x + i) - mx);
      if (keep) store_vec(keep + i, e);
      sv += e;
    }
    sum += hsum(sv);
    for (; i < end; ++i) {
      const float e = exp_scalar(static_cast<float>(x[i]) - m);
      if (keep) keep[i] = e;
      sum += e;
    }
  }
  if (log) {
    const float ls = static_cast<float>(std::log(sum));
    const fvec lsv = splat(ls);
    for (i = 0; i + kVec <= n; i += kVec) store_vec(y + i, (load_vec(x + i) - mx) - lsv);
    for (; i < n; ++i) y[i] = static_cast<T>((static_cast<float>(x[i]) - m) - ls);
    return;
  }
  const float inv = static_cast<float>(1 / sum);
  const fvec invv = splat(inv);
  if (keep) {
    for (i = 0; i + kVec <= n; i += kVec) store_vec(y + i, load_vec(keep + i) * invv);
    for (; i < n; ++i) y[i] = static_cast<T>(keep[i] * inv);
  } else {
    for (i = 0; i + kVec <= n; i += kVec) store_vec(y + i, exp_vec(load_vec(x + i) - mx) * invv);
    for (; i < n; ++i) y[i] = static_cast<T>(exp_scalar(static_cast<float>(x[i]) - m) * inv);
  }
}

// 16-bit rows are widened into `scratch` (when given) once, so that the passes over the row
// convert nothing but the final store.
template <class T>
void row_float(const T* x, T* y, int64_t n, bool log, float* scratch) {
  if constexpr (std::is_same_v<T, float>) {
    row_vec(x, y, n, row_max(x, n), log, y);
  } else if (scratch) {
    const float m = row_max(x, n, scratch);
    row_vec(static_cast<const float*>(scratch), y, n, m, log, scratch);
  } else {
    row_vec(x, y, n, row_max(x, n), log, nullptr);
  }
}

void row_double(const double* x, double* y, int64_t n, bool log) {
  double m = -INFINITY, sum = 0;
  for (int64_t i = 0; i < n; ++i) m = max_nan(m, x[i]);
  for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - m);
  const double ls = std::log(sum), inv = 1 / sum;
  for (int64_t i = 0; i < n; ++i) y[i] = log ? (x[i] - m) - ls : std::exp(x[i] - m) * inv;
}

// `w` columns of R rows (row stride `stride`), each column normalised on its own. m and s are
// buffers of w floats (doubles for float64).
template <class T, class A>
void columns(const T* x, T* y, int64_t R, int64_t stride, int64_t w, A* m, A* s, bool log) {
  for (int64_t j = 0; j < w; ++j) {
    m[j] = -INFINITY;
    s[j] = 0;
  }
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < w; ++j) m[j] = max_nan(m[j], static_cast<A>(x[i * stride + j]));
  auto ex = [](A v) {
    if constexpr (std::is_same_v<A, float>)
      return exp_scalar(v);
    else
      return std::exp(v);
  };
  for (int64_t i = 0; i < R; ++i) {
    const T* row = x + i * stride;
    int64_t j = 0;
    if constexpr (std::is_same_v<A, float>) {
      for (; j + kVec <= w; j += kVec) {
        fvec acc;
        std::memcpy(&acc, s + j, sizeof(acc));
        acc += exp_vec(load_vec(row + j) - load_vec(m + j));
        std::memcpy(s + j, &acc, sizeof(acc));
      }
    }
    for (; j < w; ++j) s[j] += ex(static_cast<A>(row[j]) - m[j]);
  }
  for (int64_t j = 0; j < w; ++j) s[j] = log ? std::log(s[j]) : 1 / s[j];
  for (int64_t i = 0; i < R; ++i) {
    const T* row = x + i * stride;
    T* out = y + i * stride;
    int64_t j = 0;
    if constexpr (std::is_same_v<A, float>) {
      for (; j + kVec <= w; j += kVec) {
        const fvec d = load_vec(row + j) - load_vec(m + j);
        store_vec(out + j, log ? d - load_vec(s + j) : exp_vec(d) * load_vec(s + j));
      }
    }
    for (; j < w; ++j) {
      const A d = static_cast<A>(row[j]) - m[j];
      out[j] = static_cast<T>(log ? d - s[j] : ex(d) * s[j]);
    }
  }
}

template <class T>
void softmax_as(const Tensor& out, const Tensor& x, int64_t dim, bool log) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
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
  T* o = static_cast<T*>(out.data_ptr());
  if (inner == 1) {
    parallel_for(0, outer, std::max<int64_t>(1, kParallelGrain / R), [&](int64_t b, int64_t e) {
      constexpr bool k16 = !std::is_same_v<T, float> && !std::is_same_v<T, double>;
      // Short rows use the stack: a heap allocation would cost as much as the row.
      float local[1024];
      const bool use_scratch = k16 && R <= kScratchRow;
      std::unique_ptr<float[]> heap(use_scratch && R > 1024 ? new float[R] : nullptr);
      float* scratch = !use_scratch ? nullptr : R > 1024 ? heap.get() : local;
      for (int64_t r = b; r < e; ++r) {
        if constexpr (std::is_same_v<T, double>) {
          row_double(in + r * R, o + r * R, R, log);
        } else {
          row_float(in + r * R, o + r * R, R, log, scratch);
        }
      }
    });
    return;
  }
  const int64_t chunks = (inner + kReduceColumns - 1) / kReduceColumns;
  parallel_for(0, outer * chunks, std::max<int64_t>(1, kParallelGrain / (R * kReduceColumns)),
               [&](int64_t b, int64_t e) {
                 std::vector<A> m(kReduceColumns), s(kReduceColumns);
                 for (int64_t item = b; item < e; ++item) {
                   const int64_t k = item / chunks, j0 = (item % chunks) * kReduceColumns;
                   const int64_t w = std::min(kReduceColumns, inner - j0);
                   const int64_t off = k * R * inner + j0;
                   columns(in + off, o + off, R, inner, w, m.data(), s.data(), log);
                 }
               });
}

}  // namespace

void softmax(const Tensor& out, const Tensor& x, int64_t dim, bool log) {
  visit_floating(x.dtype(), log ? "log_softmax" : "softmax", [&](auto tag) {
    using T = decltype(tag);
    softmax_as<T>(out, x, dim, log);
  });
}

}  // namespace kiln::cpu
