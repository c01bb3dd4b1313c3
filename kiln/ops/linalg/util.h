#pragma once
// Shared pieces of the linear-algebra entries: operand checks, the CPU product driver, the float64
// reference product and sample operands.
#include <vector>

#include "kiln/backend/cpu/blas.h"
#include "kiln/ops/registry.h"

namespace kiln::linalg {

// "mm: expected self and mat2 to have the same dtype, but got float32 and float64".
void check_same_dtype(const char* op, const char* name_a, const Tensor& a, const char* name_b,
                      const Tensor& b);
// "op: cannot multiply [2, 3] by [4, 5]: 3 != 4" unless a's last dim matches b's row dim.
void check_inner_dims(const char* op, const Tensor& a, const SymInt& a_k, const Tensor& b,
                      const SymInt& b_k);
// For integer dtypes PyTorch rejects fractional alpha/beta rather than truncating them.
void check_integral_scalars(const char* op, ScalarType dtype, const Scalar& beta,
                            const Scalar& alpha);

// A 2-D matrix (repeated over the batch) or the batch of matrices in the last three dims of t,
// starting `offset` elements into its data, for cpu::gemm.
cpu::MatrixRef matrix_ref(const Tensor& t, int64_t offset = 0);
// out = alpha * a @ b + beta * out for 2-D (a [m, k], b [k, n]) or batched operands of equal
// rank >= 3 and equal batch sizes, in any layout (no copies of strided batch dims).
void gemm_into(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta);

// Float64 reference: out[b, i, j] = sum_p a[b, i, p] * b[b, p, j] with naive loops, for 2-D or
// (equal-batch) 3-D operands of any dtype and layout.
Tensor reference_matmul(const Tensor& a, const Tensor& b);

// Sample pairs (a, b) for a [m, k] @ [k, n] product (batch > 0: [batch, m, k] @ [batch, k, n]):
// plain, transposed, non-contiguous, broadcast (0-stride) operands, zero-size m/n/k, and a larger
// product that exercises BLAS blocking.
struct MatmulOperands {
  Tensor a, b;
  std::string desc;
  // An operand with 0 strides aliases its elements: finite differences cannot perturb them one
  // at a time, so gradient checks skip these.
  bool aliased = false;
};
std::vector<MatmulOperands> matmul_operands(ScalarType dt, int64_t batch);

}  // namespace kiln::linalg
