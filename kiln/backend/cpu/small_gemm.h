#pragma once
// float32 products small enough (m n k < 2^21) that a BLAS library's packing and threading do not
// pay off, for CPUs where OpenBLAS has only its generic kernels (blas.cpp): the k loop innermost
// over register blocks of 8 rows of C (4 with AVX2) by 2 vectors, one pass over A and B with no
// copies. B's and C's rows must be contiguous; A may have any strides. Written once over the
// vectors of Note [ISA dispatch] and compiled per level.
#include <cstdint>

#include "kiln/backend/cpu/vec_math.h"

namespace kiln::cpu {

// One matrix of the product: C (m x n, leading dimension ldc) = alpha * A B + beta * C, with
// A(i, p) at a[i * a_row + p * a_col] and B(p, j) at b[p * ldb + j]. beta == 0 ignores C.
// (GemmTile<double> is the flash attention kernel's reference path.)
template <class T>
struct GemmTile {
  int64_t m, n, k;
  const T* a;
  int64_t a_row, a_col;
  const T* b;
  int64_t ldb;
  T* c;
  int64_t ldc;
  T alpha, beta;
};
using SmallGemm = GemmTile<float>;

}  // namespace kiln::cpu

#define KILN_ISA_BODY "kiln/backend/cpu/small_gemm.inc"
#include "kiln/backend/cpu/isa_expand.h"
#undef KILN_ISA_BODY

namespace kiln::cpu {

// Rows [row_begin, row_end) of g at the CPU's vector level.
inline void small_sgemm_rows(const SmallGemm& g, int64_t row_begin, int64_t row_end) {
  dispatch_isa([&](auto isa) { small_sgemm_rows(isa, g, row_begin, row_end); });
}

}  // namespace kiln::cpu
