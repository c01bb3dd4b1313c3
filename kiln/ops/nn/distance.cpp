// Similarities and distances built from registered Kiln ops (as PyTorch composes them).
#include "kiln/ops/nn/util.h"
#include "kiln/ops/ops.h"

namespace kiln {

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  // Normalise each side first (PyTorch's formulation: no overflow of the product of norms).
  const Tensor n1 = x1.norm(2, IntArrayRef(dim), true).clamp_min(eps);
  const Tensor n2 = x2.norm(2, IntArrayRef(dim), true).clamp_min(eps);
  return ((x1 / n1) * (x2 / n2)).sum(IntArrayRef(dim));
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  const int64_t dim = std::max<int64_t>(std::max(x1.dim(), x2.dim()) - 1, 0);
  return (x1 - x2 + eps).norm(p, IntArrayRef(dim), keepdim);
}

Tensor cdist(const Tensor& x1, const Tensor& x2, double p) {
  KILN_CHECK(x1.dim() >= 2 && x2.dim() >= 2,
             "cdist: only supports at least 2D tensors, X1 got: ", x1.dim(),
             "D, X2 got: ", x2.dim(), "D");
  KILN_CHECK(x1.sym_size(-1) == x2.sym_size(-1),
             "cdist: X1 and X2 must have the same number of columns. X1: ", x1.sym_size(-1),
             " X2: ", x2.sym_size(-1));
  KILN_CHECK(p >= 0, "cdist: only supports non-negative p values, got ", p);
  return (x1.unsqueeze(-2) - x2.unsqueeze(-3)).norm(p, IntArrayRef(int64_t{-1}));
}

Tensor normalize(const Tensor& input, double p, int64_t dim, double eps) {
  return input / input.norm(p, IntArrayRef(dim), true).clamp_min(eps);
}

}  // namespace kiln
