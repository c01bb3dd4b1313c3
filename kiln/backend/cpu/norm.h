#pragma once
// CPU kernels of the normalisation ops. Inputs are dense float or double (lower precisions are
// computed on a float copy); statistics accumulate in double: row statistics in two passes over
// each row (mean, then squared deviations), channel statistics in one pass shifted by the first
// element so that large means do not cancel.
#include <cstdint>

namespace kiln::cpu {

// Mean and 1/sqrt(var + eps) (biased variance) of `rows` contiguous rows of n elements.
// centered = false: the root mean square instead (mean is left untouched, may be null).
template <class T>
void row_moments(const T* x, int64_t rows, int64_t n, bool centered, double eps, T* mean, T* rstd);

// row_moments and y = (x - mean[r]) * rstd[r] * w + b (w, b: per element of a row, may be null)
// in one sweep, each row normalised while it is in cache (layer_norm, rms_norm).
template <class T>
void row_normalize(const T* x, T* y, int64_t rows, int64_t n, bool centered, double eps, T* mean,
                   T* rstd, const T* w, const T* b);

// Per-channel mean and biased variance of x viewed as [outer, channels, inner].
template <class T>
void channel_moments(const T* x, int64_t outer, int64_t channels, int64_t inner, double* mean,
                     double* var);

// y = (x - mean[r]) * rstd[r] * w[c] + b[c] on x viewed as [rows, inner] where row r's channel
// is (r % channels) and w/b are per channel (null: 1 and 0); `per_row` false applies w/b per
// element of a row instead (layer norm: w/b span the row).
template <class T>
void affine_normalize(const T* x, T* y, int64_t rows, int64_t inner, const T* mean, const T* rstd,
                      const T* w, const T* b, bool per_row_channel, int64_t channels);

// Gradients of y = xhat * w (+ b) with xhat = (x - mean[r]) * rstd[r] over `rows` contiguous
// rows of n elements, given gy = dL/dy: dx = rstd * (g - xhat * mean(g * xhat) - mean(g)) with
// g = gy * w, and the column sums dw = sum(gy * xhat), db = sum(gy). mean null: rms_norm (xhat
// = x * rstd, no mean(g) term). w null: weight 1. dw/db may be null when not wanted.
template <class T>
void row_norm_backward(const T* gy, const T* x, const T* mean, const T* rstd, const T* w,
                       int64_t rows, int64_t n, T* dx, T* dw, T* db);

}  // namespace kiln::cpu
