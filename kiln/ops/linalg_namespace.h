#pragma once
// kiln::linalg (libtorch's torch::linalg) for what composes from Kiln's ops: vector and matrix
// norms, vecdot, cross, multi_dot and matrix_power with n >= 0. Decompositions and solvers (inv,
// det, solve, cholesky, qr, svd, eig, lstsq, pinv) and the norms that need singular values
// ("nuc", 2, -2) are not in Kiln yet: they raise an error that says so.
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln::linalg {

// The p-norm of the entries over `dim` (all of them when not given).
Tensor vector_norm(const Tensor& self, const Scalar& ord = 2, OptionalIntArrayRef dim = {},
                   bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
// ord: "fro", 1, -1, inf or -inf over the two dims `dim`.
Tensor matrix_norm(const Tensor& self, const Scalar& ord, IntArrayRef dim = {-2, -1},
                   bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
Tensor matrix_norm(const Tensor& self, std::string_view ord = "fro", IntArrayRef dim = {-2, -1},
                   bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
// matrix_norm(A, "nuc"): a string literal must not convert to Scalar (through bool).
template <size_t N>
Tensor matrix_norm(const Tensor& self, const char (&ord)[N], IntArrayRef dim = {-2, -1},
                   bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) {
  return matrix_norm(self, std::string_view(ord), dim, keepdim, dtype);
}
// PyTorch's linalg.norm: without ord, the 2-norm of the flattened entries (or over dim); with
// ord, a vector norm for one dim (or a 1-D input) and a matrix norm for two (or a 2-D input).
Tensor norm(const Tensor& self, const std::optional<Scalar>& ord = std::nullopt,
            OptionalIntArrayRef dim = {}, bool keepdim = false,
            std::optional<ScalarType> dtype = std::nullopt);
Tensor norm(const Tensor& self, std::string_view ord, OptionalIntArrayRef dim = {},
            bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
template <size_t N>
Tensor norm(const Tensor& self, const char (&ord)[N], OptionalIntArrayRef dim = {},
            bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) {
  return norm(self, std::string_view(ord), dim, keepdim, dtype);
}

// sum(x * y, dim), broadcasting x and y.
Tensor vecdot(const Tensor& x, const Tensor& y, int64_t dim = -1);
// The cross product of 3-vectors along dim (whose size must be 3), broadcasting.
Tensor cross(const Tensor& input, const Tensor& other, int64_t dim = -1);
// A chain of matmuls; the first and last tensors may be 1-D.
Tensor multi_dot(const std::vector<Tensor>& tensors);
// A square matrix (or batch) to the power n >= 0; n = 0 gives the identity.
Tensor matrix_power(const Tensor& self, int64_t n);

}  // namespace kiln::linalg
