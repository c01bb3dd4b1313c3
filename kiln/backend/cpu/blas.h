#pragma once
// Matrix products on the CPU. float32 goes to Kiln's register-blocked kernel below 2^21
// multiply-adds and to oneDNN's matmul above; float64 (and float32 where oneDNN has no optimised
// kernel) to OpenBLAS with transposed and strided operands passed as trans/lda (no copies);
// bfloat16/float16 to oneDNN's matmul where the CPU has one, otherwise to float32 sgemm on
// converted copies; integers use a plain loop.
#include <cstdint>
#include <string>
#include <vector>

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
//
// int8 operands with an int32 C (c_dtype kInt32, alpha 1, beta 0) are _int_mm's product: oneDNN's
// s8 x s8 -> s32 matmul (VNNI where the CPU has it), else a loop accumulating in int32.
struct GemmArgs {
  ScalarType dtype = ScalarType::Undefined;
  ScalarType c_dtype = ScalarType::Undefined;  // C's dtype where it is not `dtype`
  int64_t batch = 1, m = 0, n = 0, k = 0;
  MatrixRef a, b;
  void* c = nullptr;
  int64_t c_batch_stride = 0, ldc = 0;
  double alpha = 1, beta = 0;
  ScalarType out_dtype() const { return c_dtype == ScalarType::Undefined ? dtype : c_dtype; }
};
void gemm(const GemmArgs& args);

// The implementations a float product can take, which max-autotune times against each other
// (kiln/compile/codegen/gemm_autotune.h): OpenBLAS's sgemm, oneDNN's matmul, Kiln's
// register-blocked kernel (small_gemm.h), and for 16-bit floats float32 sgemm on converted copies.
enum class GemmImpl : uint8_t { OpenBlas, OneDnn, Kiln, Converted };
const char* to_string(GemmImpl impl);
// The implementations that can run `args` on this CPU; empty where there is one path only
// (float64, integers, tiny products).
std::vector<GemmImpl> gemm_candidates(const GemmArgs& args);
// Runs `args` with `impl`; false, having computed nothing, where impl cannot.
bool gemm_with(GemmImpl impl, const GemmArgs& args);
// Whether gemm() runs a product on Kiln's register-blocked kernel when nothing intercepts it
// (float32 under 2^21 multiply-adds).
bool is_kiln_gemm_default(const GemmArgs& args);
// Runs `args` on Kiln's register-blocked kernel in panels of whole rows of C, viewed as batch*m
// rows of n, calling after_panel(ctx, row_begin, row_end) on the thread that computed each panel
// right after it, while it is in cache: the compiler applies a GEMM's epilogue there
// (kiln/compile/codegen/gemm_epilogue.h). False, having computed nothing, unless args is float32
// with its C matrices dense and one after another (ldc == n, c_batch_stride == m * n).
using PanelFn = void (*)(void* ctx, int64_t row_begin, int64_t row_end);
bool kiln_gemm_by_panels(const GemmArgs& args, PanelFn after_panel, void* ctx);
// A function gemm() asks first, on this thread, while it is set; it returns true when it ran the
// product. Returns the one it replaces.
using GemmInterceptor = bool (*)(const GemmArgs& args);
GemmInterceptor set_gemm_interceptor(GemmInterceptor interceptor);

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
