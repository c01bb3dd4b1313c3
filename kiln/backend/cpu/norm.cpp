#include "kiln/backend/cpu/norm.h"

#include <cmath>
#include <vector>

#include "kiln/backend/cpu/parallel.h"

namespace kiln::cpu {
namespace {

// A row's mean (when centered) and 1/sqrt(var + eps): two passes over it while it is in cache,
// the mean, then the squared deviations from it (no cancellation, unlike a one-pass sum of
// squares), each a vectorisable double sum.
template <class T>
void row_stats(const T* row, int64_t n, bool centered, double eps, T* mean, T* rstd) {
  double m = 0;
  if (centered) {
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) s += static_cast<double>(row[i]);
    m = n > 0 ? s / static_cast<double>(n) : NAN;
    *mean = static_cast<T>(m);
  }
  double ss = 0;
#pragma omp simd reduction(+ : ss)
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(row[i]) - m;
    ss += d * d;
  }
  *rstd = static_cast<T>(1.0 / std::sqrt((n > 0 ? ss / static_cast<double>(n) : NAN) + eps));
}

// y = (x - m) * s * w + b over one row (w, b: per element, null for 1 and 0).
template <class T>
void normalize_row(const T* xr, T* yr, int64_t n, T m, T s, const T* w, const T* b) {
  for (int64_t i = 0; i < n; ++i) {
    T v = (xr[i] - m) * s;
    if (w) v *= w[i];
    if (b) v += b[i];
    yr[i] = v;
  }
}

int64_t rows_per_task(int64_t n) {
  return std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n, 1));
}

}  // namespace

template <class T>
void row_moments(const T* x, int64_t rows, int64_t n, bool centered, double eps, T* mean, T* rstd) {
  parallel_for(0, rows, rows_per_task(n), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      row_stats(x + r * n, n, centered, eps, centered ? mean + r : nullptr, rstd + r);
  });
}

template <class T>
void row_normalize(const T* x, T* y, int64_t rows, int64_t n, bool centered, double eps, T* mean,
                   T* rstd, const T* w, const T* b) {
  parallel_for(0, rows, rows_per_task(n), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      row_stats(x + r * n, n, centered, eps, centered ? mean + r : nullptr, rstd + r);
      normalize_row(x + r * n, y + r * n, n, centered ? mean[r] : T(0), rstd[r], w, b);
    }
  });
}

template <class T>
void channel_moments(const T* x, int64_t outer, int64_t channels, int64_t inner, double* mean,
                     double* var) {
  const double count = static_cast<double>(outer * inner);
  parallel_for(0, channels, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const double shift = count > 0 ? static_cast<double>(x[c * inner]) : 0.0;
      double s = 0, ss = 0;
      for (int64_t o = 0; o < outer; ++o) {
        const T* p = x + (o * channels + c) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          const double d = static_cast<double>(p[i]) - shift;
          s += d;
          ss += d * d;
        }
      }
      const double m = count > 0 ? s / count : NAN;
      mean[c] = m + shift;
      var[c] = count > 0 ? std::max(ss / count - m * m, 0.0) : NAN;
    }
  });
}

template <class T>
void affine_normalize(const T* x, T* y, int64_t rows, int64_t inner, const T* mean, const T* rstd,
                      const T* w, const T* b, bool per_row_channel, int64_t channels) {
  parallel_for(0, rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(inner, 1)),
               [&](int64_t r0, int64_t r1) {
                 for (int64_t r = r0; r < r1; ++r) {
                   const T m = mean ? mean[r] : T(0);
                   const T s = rstd[r];
                   const T* xr = x + r * inner;
                   T* yr = y + r * inner;
                   if (per_row_channel) {
                     const int64_t c = r % channels;
                     const T scale = w ? w[c] * s : s;
                     const T shift = (b ? b[c] : T(0)) - m * scale;
                     for (int64_t i = 0; i < inner; ++i) yr[i] = xr[i] * scale + shift;
                   } else {
                     normalize_row(xr, yr, inner, m, s, w, b);
                   }
                 }
               });
}

template <class T>
void row_norm_backward(const T* gy, const T* x, const T* mean, const T* rstd, const T* w,
                       int64_t rows, int64_t n, T* dx, T* dw, T* db) {
  // Rows are split into one block per thread; each block sums its dw/db columns into its own
  // slice of `partial`, and the slices are added up at the end.
  const int64_t blocks = std::min<int64_t>(num_threads(), std::max<int64_t>(1, rows * n / 8192));
  const bool columns = dw || db;
  std::vector<T> partial(columns ? static_cast<size_t>(2 * blocks * n) : 0, T(0));
  const T inv_n = T(1) / static_cast<T>(n);
  parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      T* pw = columns ? partial.data() + 2 * blk * n : nullptr;
      T* pb = columns ? pw + n : nullptr;
      for (int64_t r = rows * blk / blocks; r < rows * (blk + 1) / blocks; ++r) {
        const T* gr = gy + r * n;
        const T* xr = x + r * n;
        const T m = mean ? mean[r] : T(0), s = rstd[r];
        T sum_gh = 0, sum_g = 0;
#pragma omp simd reduction(+ : sum_gh, sum_g)
        for (int64_t i = 0; i < n; ++i) {
          const T g = w ? gr[i] * w[i] : gr[i];
          sum_gh += g * (xr[i] - m) * s;
          sum_g += g;
        }
        const T a = sum_gh * inv_n, c = mean ? sum_g * inv_n : T(0);
        T* dr = dx + r * n;
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) {
          const T g = w ? gr[i] * w[i] : gr[i];
          const T h = (xr[i] - m) * s;
          dr[i] = s * (g - h * a - c);
        }
        if (!columns) continue;
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) {
          pw[i] += gr[i] * (xr[i] - m) * s;
          pb[i] += gr[i];
        }
      }
    }
  });
  for (int64_t i = 0; columns && i < n; ++i) {
    T sw = 0, sb = 0;
    for (int64_t blk = 0; blk < blocks; ++blk) {
      sw += partial[static_cast<size_t>(2 * blk * n + i)];
      sb += partial[static_cast<size_t>((2 * blk + 1) * n + i)];
    }
    if (dw) dw[i] = sw;
    if (db) db[i] = sb;
  }
}

#define KILN_NORM_INSTANTIATE(T)                                                                  \
  template void row_moments<T>(const T*, int64_t, int64_t, bool, double, T*, T*);                 \
  template void row_normalize<T>(const T*, T*, int64_t, int64_t, bool, double, T*, T*, const T*,  \
                                 const T*);                                                       \
  template void channel_moments<T>(const T*, int64_t, int64_t, int64_t, double*, double*);        \
  template void affine_normalize<T>(const T*, T*, int64_t, int64_t, const T*, const T*, const T*, \
                                    const T*, bool, int64_t);                                     \
  template void row_norm_backward<T>(const T*, const T*, const T*, const T*, const T*, int64_t,   \
                                     int64_t, T*, T*, T*);
KILN_NORM_INSTANTIATE(float)
KILN_NORM_INSTANTIATE(double)
#undef KILN_NORM_INSTANTIATE

}  // namespace kiln::cpu
