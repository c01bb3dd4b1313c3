#include "kiln/backend/cpu/norm.h"

#include <cmath>
#include <vector>

#include "kiln/backend/cpu/parallel.h"

namespace kiln::cpu {

template <class T>
void row_moments(const T* x, int64_t rows, int64_t n, bool centered, double eps, T* mean, T* rstd) {
  parallel_for(
      0, rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const T* row = x + r * n;
          const double shift = centered && n > 0 ? static_cast<double>(row[0]) : 0.0;
          double s = 0, ss = 0;
          for (int64_t i = 0; i < n; ++i) {
            const double d = static_cast<double>(row[i]) - shift;
            s += d;
            ss += d * d;
          }
          const double m = n > 0 ? s / static_cast<double>(n) : NAN;
          const double var = n > 0 ? ss / static_cast<double>(n) - (centered ? m * m : 0) : NAN;
          if (centered) mean[r] = static_cast<T>(m + shift);
          rstd[r] = static_cast<T>(1.0 / std::sqrt(std::max(var, 0.0) + eps));
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
                     for (int64_t i = 0; i < inner; ++i) {
                       T v = (xr[i] - m) * s;
                       if (w) v *= w[i];
                       if (b) v += b[i];
                       yr[i] = v;
                     }
                   }
                 }
               });
}

#define KILN_NORM_INSTANTIATE(T)                                                                  \
  template void row_moments<T>(const T*, int64_t, int64_t, bool, double, T*, T*);                 \
  template void channel_moments<T>(const T*, int64_t, int64_t, int64_t, double*, double*);        \
  template void affine_normalize<T>(const T*, T*, int64_t, int64_t, const T*, const T*, const T*, \
                                    const T*, bool, int64_t);
KILN_NORM_INSTANTIATE(float)
KILN_NORM_INSTANTIATE(double)
#undef KILN_NORM_INSTANTIATE

}  // namespace kiln::cpu
