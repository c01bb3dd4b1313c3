#pragma once
// Shared pieces of the normalisation entries: the input gradient of "normalise over some dims",
// written with Kiln ops so that it is differentiable again.
#include <vector>

#include "kiln/ops/nn/util.h"
#include "kiln/ops/ops.h"

namespace kiln::nn_util {

// Gradient of y = xhat = (x - mean) * rstd (centered) or x * rstd (not centered) over `dims`
// (n elements each) with respect to x, given g = dL/dxhat. mean_b/rstd_b are the statistics
// broadcast against x. grad_mean/grad_rstd are gradients that reached the saved statistics
// (double backward), broadcast likewise; undefined when none.
inline Tensor normalized_input_grad(const Tensor& g, const Tensor& xhat, const Tensor& rstd_b,
                                    IntArrayRef dims, bool centered, const Tensor& grad_mean,
                                    const Tensor& grad_rstd, double n) {
  Tensor inner = g - xhat * (g * xhat).mean(dims, true);
  if (centered) inner = inner - g.mean(dims, true);
  Tensor dx = rstd_b * inner;
  if (centered && grad_mean.defined()) dx = dx + grad_mean / n;
  if (grad_rstd.defined()) dx = dx - grad_rstd * rstd_b * rstd_b * xhat / n;
  return dx;
}

// The last k of ndim dims (the normalized dims of layer_norm/rms_norm).
inline std::vector<int64_t> trailing_dims(int64_t ndim, int64_t k) {
  std::vector<int64_t> dims;
  for (int64_t d = ndim - k; d < ndim; ++d) dims.push_back(d);
  return dims;
}

// Sums t over every dim but `keep` (per-channel parameter gradients).
inline Tensor sum_except(const Tensor& t, int64_t keep) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (d != keep) dims.push_back(d);
  return dims.empty() ? t : t.sum(dims);
}

// Shape [1, C, 1, ...] of rank ndim (per-channel tensors broadcast against (N, C, ...)).
inline std::vector<int64_t> channel_shape(int64_t channels, int64_t ndim) {
  std::vector<int64_t> s(static_cast<size_t>(ndim), 1);
  if (ndim > 1) s[1] = channels;
  return s;
}

}  // namespace kiln::nn_util
