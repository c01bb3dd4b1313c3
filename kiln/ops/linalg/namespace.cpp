#include "kiln/ops/linalg_namespace.h"

#include <cmath>
#include <limits>
#include <utility>

#include "kiln/ops/ops.h"

namespace kiln::linalg {
namespace {

int64_t wrap_dim(const char* op, int64_t d, int64_t rank) {
  KILN_CHECK(d >= -rank && d < rank, op, ": dim ", d, " is out of range for a tensor of ", rank,
             " dims");
  return d < 0 ? d + rank : d;
}

Tensor in_dtype(const Tensor& t, std::optional<ScalarType> dtype) {
  return dtype ? t.to(*dtype) : t;
}

[[noreturn]] void needs_svd(const char* op, std::string_view ord) {
  KILN_FAIL(op, ": ord=", ord,
            " needs singular values, which Kiln does not compute yet; use \"fro\", 1, -1, inf "
            "or -inf");
}

// Max (or min) over the last reduced dim of the absolute sums over the other one.
Tensor induced_norm(const Tensor& a, int64_t sum_dim, int64_t extreme_dim, bool largest,
                    bool keepdim) {
  Tensor sums = a.abs().sum({sum_dim}, /*keepdim=*/true);
  Tensor out = largest ? sums.amax({extreme_dim}, true) : sums.amin({extreme_dim}, true);
  if (!keepdim)
    out = out.squeeze(std::max(sum_dim, extreme_dim)).squeeze(std::min(sum_dim, extreme_dim));
  return out;
}

// The two matrix dims of a matrix norm, wrapped and checked.
std::pair<int64_t, int64_t> matrix_dims(const Tensor& self, IntArrayRef dim) {
  KILN_CHECK(self.dim() >= 2,
             "linalg::matrix_norm: The input tensor A must have at least 2 "
             "dimensions, got shape ",
             self.sizes());
  KILN_CHECK(dim.size() == 2, "linalg::matrix_norm: dim must be a 2-tuple, got ", dim.size(),
             " dims");
  const int64_t r = wrap_dim("linalg::matrix_norm", dim[0], self.dim());
  const int64_t c = wrap_dim("linalg::matrix_norm", dim[1], self.dim());
  KILN_CHECK(r != c, "linalg::matrix_norm: dims must be different, got (", dim[0], ", ", dim[1],
             ")");
  return {r, c};
}

}  // namespace

Tensor vector_norm(const Tensor& self, const Scalar& ord, OptionalIntArrayRef dim, bool keepdim,
                   std::optional<ScalarType> dtype) {
  KILN_CHECK(self.is_floating_point() || dtype,
             "linalg::vector_norm: expected a floating-point "
             "input (or a dtype), got ",
             self.dtype());
  const Tensor x = in_dtype(self, dtype);
  return kiln::norm(x, ord, dim ? *dim : IntArrayRef(), keepdim);
}

Tensor matrix_norm(const Tensor& self, const Scalar& ord, IntArrayRef dim, bool keepdim,
                   std::optional<ScalarType> dtype) {
  const auto [r, c] = matrix_dims(self, dim);
  const double p = ord.to_double();
  const Tensor a = in_dtype(self, dtype);
  if (p == 1 || p == -1) return induced_norm(a, r, c, p > 0, keepdim);  // max column sum
  if (std::isinf(p)) return induced_norm(a, c, r, p > 0, keepdim);      // max row sum
  needs_svd("linalg::matrix_norm", kiln::detail::str_cat(p));
}

Tensor matrix_norm(const Tensor& self, std::string_view ord, IntArrayRef dim, bool keepdim,
                   std::optional<ScalarType> dtype) {
  if (ord == "nuc") needs_svd("linalg::matrix_norm", ord);
  KILN_CHECK(ord == "fro", "linalg::matrix_norm: Order ", ord, " not supported.");
  matrix_dims(self, dim);
  return kiln::norm(in_dtype(self, dtype), 2, dim, keepdim);
}

Tensor norm(const Tensor& self, const std::optional<Scalar>& ord, OptionalIntArrayRef dim,
            bool keepdim, std::optional<ScalarType> dtype) {
  if (!ord) return vector_norm(self, 2, dim, keepdim, dtype);
  const size_t dims = dim ? dim->size() : static_cast<size_t>(self.dim());
  KILN_CHECK(dim || self.dim() == 1 || self.dim() == 2,
             "linalg::norm: If dim is not specified "
             "but ord is, the input must be 1D or 2D. Got ",
             self.dim(), "D.");
  if (dims == 1) return vector_norm(self, *ord, dim, keepdim, dtype);
  KILN_CHECK(dims == 2, "linalg::norm: dim must have 1 or 2 entries, got ", dims);
  return matrix_norm(self, *ord, dim ? *dim : IntArrayRef({-2, -1}), keepdim, dtype);
}

Tensor norm(const Tensor& self, std::string_view ord, OptionalIntArrayRef dim, bool keepdim,
            std::optional<ScalarType> dtype) {
  KILN_CHECK(dim || self.dim() == 2,
             "linalg::norm: If dim is not specified but ord is, the "
             "input must be 2D for a matrix norm. Got ",
             self.dim(), "D.");
  return matrix_norm(self, ord, dim ? *dim : IntArrayRef({-2, -1}), keepdim, dtype);
}

Tensor vecdot(const Tensor& x, const Tensor& y, int64_t dim) { return (x * y).sum({dim}); }

Tensor cross(const Tensor& input, const Tensor& other, int64_t dim) {
  KILN_CHECK(input.dim() == other.dim(),
             "linalg::cross: inputs must have the same number of "
             "dimensions, got ",
             input.sizes(), " and ", other.sizes());
  const int64_t d = wrap_dim("linalg::cross", dim, input.dim());
  KILN_CHECK(input.size(d) == 3 && other.size(d) == 3, "linalg::cross: inputs dimension ", dim,
             " must have length 3. Got ", input.size(d), " and ", other.size(d));
  auto at = [d](const Tensor& t, int64_t i) { return t.narrow(d, i, 1); };
  return cat({at(input, 1) * at(other, 2) - at(input, 2) * at(other, 1),
              at(input, 2) * at(other, 0) - at(input, 0) * at(other, 2),
              at(input, 0) * at(other, 1) - at(input, 1) * at(other, 0)},
             d);
}

Tensor multi_dot(const std::vector<Tensor>& tensors) {
  KILN_CHECK(tensors.size() >= 2, "linalg::multi_dot: expected at least 2 tensors but got ",
             tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const bool end = i == 0 || i + 1 == tensors.size();
    KILN_CHECK(tensors[i].dim() == 2 || (end && tensors[i].dim() == 1),
               "linalg::multi_dot: tensor ", i, " must be 2D", end ? " or 1D" : "", ", got shape ",
               tensors[i].sizes());
  }
  Tensor out = tensors[0];
  for (size_t i = 1; i < tensors.size(); ++i) out = matmul(out, tensors[i]);
  return out;
}

Tensor matrix_power(const Tensor& self, int64_t n) {
  KILN_CHECK(self.dim() >= 2 && self.size(-1) == self.size(-2),
             "linalg::matrix_power: expected "
             "a square matrix or a batch of them, got shape ",
             self.sizes());
  KILN_CHECK(n >= 0, "linalg::matrix_power: n = ", n,
             " needs the matrix inverse, which Kiln does not compute yet");
  if (n == 0) return eye(self.size(-1), self.options()).expand(self.sizes()).clone();
  Tensor result, base = self;
  for (int64_t k = n; k > 0; k >>= 1) {
    if (k & 1) result = result.defined() ? matmul(result, base) : base;
    if (k > 1) base = matmul(base, base);
  }
  return result;
}

}  // namespace kiln::linalg
