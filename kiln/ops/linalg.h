#pragma once
// Linear algebra: matmul (every PyTorch broadcasting case), mm, bmm, mv, addmm, baddbmm, linear,
// outer, dot, einsum.
#include <string_view>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln {

// Registry entries (kernels on OpenBLAS/oneDNN, backward with these same ops).
Tensor mm(const Tensor& self, const Tensor& mat2);
Tensor bmm(const Tensor& self, const Tensor& mat2);
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
             const Scalar& alpha = 1);
Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2,
               const Scalar& beta = 1, const Scalar& alpha = 1);
// int8 [m, k] @ int8 [k, n] -> int32 [m, n] (PyTorch's torch._int_mm).
Tensor _int_mm(const Tensor& self, const Tensor& mat2);
Tensor dot(const Tensor& self, const Tensor& other);
Tensor outer(const Tensor& self, const Tensor& vec2);
Tensor ger(const Tensor& self, const Tensor& vec2);  // the old name of outer

// Compositions of the entries above (their gradients come from the entries).
// matmul: 1D·1D dot, 2D·1D and 1D·2D matrix-vector, 2D·2D mm, and batched products with the
// batch dims broadcast (a 1D operand is a row or column vector that is dropped from the result).
Tensor matmul(const Tensor& self, const Tensor& other);
Tensor mv(const Tensor& self, const Tensor& vec);
// y = input @ weight^T + bias, input [..., in_features], weight [out_features, in_features].
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});
// Einstein summation over the operands' labelled dims ("bij,bjk->bik", "ii->i", "...ij,...jk"),
// with implicit output (labels seen once, sorted) when there is no "->".
Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands);

}  // namespace kiln
