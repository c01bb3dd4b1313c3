#pragma once
// Matrix products on the CPU. float32/float64 go to OpenBLAS with transposed and strided operands
// passed as trans/lda (no copies); bfloat16/float16 go to oneDNN's matmul where the CPU has one,
// otherwise to float32 sgemm on converted copies; integers use a plain loop.
#include <cstdint>
#include <string>

#include "kiln/core/dtype.h"

namespace kiln::cpu {

// A batch of matrices: element (b, i, j) lives at data + b*batch_stride + i*row_stride +
// j*col_stride (in elements). batch_stride 0 repeats one matrix for every batch.
struct MatrixRef {
  const void* data = nullptr;
  int64_t batch_stride = 0, row_stride = 0, col_stride = 0;
};

// C[b] = alpha * A[b] @ B[b] + beta * C[b] for b < batch, with A[b] m x k, B[b] k x n and C[b]
// m x n row-major (leading dimension ldc, batch stride c_batch_stride). As in BLAS, beta == 0
// ignores C's previous contents (NaN and inf included).
struct GemmArgs {
  ScalarType dtype = ScalarType::Undefined;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  MatrixRef a, b;
  void* c = nullptr;
  int64_t c_batch_stride = 0, ldc = 0;
  double alpha = 1, beta = 0;
};
void gemm(const GemmArgs& args);

// *out = sum_i x[i * incx] * y[i * incy] in `dtype` (16-bit floats accumulate in float,
// integers wrap around as in C).
void dot(ScalarType dtype, int64_t n, const void* x, int64_t incx, const void* y, int64_t incy,
         void* out);

// Makes OpenBLAS use as many threads as OpenMP (kiln::cpu::num_threads()) for a call of `work`
// multiply-adds; cheap when unchanged. OpenBLAS's pthreads build (where its OpenMP build is not
// installed) keeps its own pool, whose workers spin beside Kiln's after each threaded call: it
// gets one thread below kOwnBlasPoolMinWork.
void sync_blas_threads(int64_t work = INT64_MAX);
constexpr int64_t kOwnBlasPoolMinWork = int64_t{1} << 24;

// The paths float32 and bfloat16 matrix products take on this machine, for reports and
// benchmarks.
std::string f32_gemm_path();
const char* bf16_gemm_path();

}  // namespace kiln::cpu
