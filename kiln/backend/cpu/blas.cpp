#include "kiln/backend/cpu/blas.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <type_traits>

#include "kiln/backend/cpu/dnnl_matmul.h"
#include "kiln/backend/cpu/loops.h"
#include "kiln/backend/cpu/parallel.h"
#include "kiln/backend/cpu/small_gemm.h"
#include "kiln/core/error.h"
#include "kiln/core/storage.h"

namespace kiln::cpu {
namespace {

// OpenBLAS runs products below this many multiply-adds on one thread (its
// GEMM_MULTITHREAD_THRESHOLD), so batches of such products are spread over OpenMP threads.
constexpr int64_t kSingleThreadedGemmWork = 65536 * 4;

// How one matrix of a batch is handed to BLAS: row-major (NoTrans) or column-major (Trans) with
// leading dimension ld, or neither (the layout has to be copied first).
struct BlasLayout {
  bool ok = false;
  bool trans = false;
  int64_t ld = 0;
};

BlasLayout blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  const int64_t r1 = std::max<int64_t>(rows, 1), c1 = std::max<int64_t>(cols, 1);
  // The stride of a size-1 dim is never used: any valid leading dimension does.
  if ((cs == 1 || cols == 1) && (rows == 1 || rs >= c1)) return {true, false, rows == 1 ? c1 : rs};
  if ((rs == 1 || rows == 1) && (cols == 1 || cs >= r1)) return {true, true, cols == 1 ? r1 : cs};
  return {};
}

void check_blas_size(int64_t v, const char* what) {
  KILN_CHECK(v <= INT_MAX, "matmul: ", what, " ", v, " exceeds the BLAS limit of ", INT_MAX);
}

// Scratch of n elements from the CPU allocator, whose cache hands a product's same-sized buffers
// back on its next call (new[] would fault fresh pages in on every call: a float16 [256]^2
// product spent more time there than in sgemm).
template <class T>
class Owned {
 public:
  Owned() = default;
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() { release(); }
  void reset(int64_t n) {
    release();
    bytes_ = static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(T);
    data_ = static_cast<T*>(cpu_allocator()->allocate(bytes_));
  }
  T* get() const { return data_; }

 private:
  void release() {
    if (data_ != nullptr) cpu_allocator()->deallocate(data_, bytes_);
    data_ = nullptr;
  }
  T* data_ = nullptr;
  size_t bytes_ = 0;
};

// n consecutive elements converted from S to D; float and its 16-bit types a vector at a time
// (the baseline level's vectors: the hardware float16 and bfloat16 conversions).
template <class S, class D>
void convert_run(const S* s, D* d, int64_t n) {
  int64_t j = 0;
  if constexpr (kIsVectorFloat<S> && kIsVectorFloat<D> && !std::is_same_v<S, D>)
    for (; j + kVec <= n; j += kVec) store_vec(d + j, load_vec(s + j));
  for (; j < n; ++j) d[j] = static_cast<D>(static_cast<compute_t<S>>(s[j]));
}

// Copies a batch of matrices (any strides, 0-stride batch kept as one matrix) into dense row-major
// storage of type D. Returns the copy's MatrixRef.
template <class S, class D>
MatrixRef dense_copy(const MatrixRef& src, int64_t batch, int64_t rows, int64_t cols,
                     Owned<D>& buf) {
  const int64_t copies = src.batch_stride == 0 ? 1 : batch;
  const int64_t per = rows * cols;
  buf.reset(copies * per);
  const S* s = static_cast<const S*>(src.data);
  D* d = buf.get();
  parallel_for(0, copies * rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(cols, 1)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t r = begin; r < end; ++r) {
                   const S* row = s + (r / rows) * src.batch_stride + (r % rows) * src.row_stride;
                   D* out = d + r * cols;
                   if (src.col_stride == 1) {
                     convert_run(row, out, cols);
                     continue;
                   }
                   for (int64_t j = 0; j < cols; ++j)
                     out[j] = static_cast<D>(static_cast<compute_t<S>>(row[j * src.col_stride]));
                 }
               });
  return {buf.get(), copies == 1 ? 0 : per, cols, 1};
}

// C = beta * C over every matrix of the batch (beta == 0 writes zeros): the k == 0 product.
template <class T>
void scale_c(const GemmArgs& g) {
  using C = compute_t<T>;
  T* c = static_cast<T*>(g.c);
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t i = 0; i < g.m; ++i) {
      T* row = c + b * g.c_batch_stride + i * g.ldc;
      for (int64_t j = 0; j < g.n; ++j)
        row[j] =
            g.beta == 0 ? T(0) : static_cast<T>(static_cast<C>(row[j]) * static_cast<C>(g.beta));
    }
}

template <class T>
void blas_call(bool ta, bool tb, int m, int n, int k, T alpha, const T* a, int lda, const T* b,
               int ldb, T beta, T* c, int ldc) {
  const CBLAS_TRANSPOSE opa = ta ? CblasTrans : CblasNoTrans, opb = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, opa, opb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    cblas_dgemm(CblasRowMajor, opa, opb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

// float32/float64 through OpenBLAS. Operands BLAS cannot address are copied to dense storage.
template <class T>
void blas_gemm(GemmArgs g) {
  Owned<T> a_copy, b_copy;
  BlasLayout la = blas_layout(g.m, g.k, g.a.row_stride, g.a.col_stride);
  if (!la.ok) {
    g.a = dense_copy<T, T>(g.a, g.batch, g.m, g.k, a_copy);
    la = blas_layout(g.m, g.k, g.a.row_stride, g.a.col_stride);
  }
  BlasLayout lb = blas_layout(g.k, g.n, g.b.row_stride, g.b.col_stride);
  if (!lb.ok) {
    g.b = dense_copy<T, T>(g.b, g.batch, g.k, g.n, b_copy);
    lb = blas_layout(g.k, g.n, g.b.row_stride, g.b.col_stride);
  }
  for (int64_t v : {g.m, g.n, g.k, la.ld, lb.ld, g.ldc}) check_blas_size(v, "matrix dimension");
  sync_blas_threads(g.m * g.n * g.k);
  const T* a = static_cast<const T*>(g.a.data);
  const T* b = static_cast<const T*>(g.b.data);
  T* c = static_cast<T*>(g.c);
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      blas_call<T>(la.trans, lb.trans, static_cast<int>(g.m), static_cast<int>(g.n),
                   static_cast<int>(g.k), static_cast<T>(g.alpha), a + i * g.a.batch_stride,
                   static_cast<int>(la.ld), b + i * g.b.batch_stride, static_cast<int>(lb.ld),
                   static_cast<T>(g.beta), c + i * g.c_batch_stride, static_cast<int>(g.ldc));
  };
  if (g.batch > 1 && g.m * g.n * g.k <= kSingleThreadedGemmWork) {
    parallel_for(0, g.batch, std::max<int64_t>(1, kSingleThreadedGemmWork / (g.m * g.n * g.k)),
                 run);
  } else {
    run(0, g.batch);
  }
}

template <class T>
void dispatch_gemm(const GemmArgs& g);

// bfloat16/float16 without a oneDNN kernel: float32 copies, a float32 product, rounded back.
template <class T>
void converted_gemm(const GemmArgs& g) {
  Owned<float> a, b, c;
  GemmArgs f = g;
  f.dtype = kFloat32;
  f.a = dense_copy<T, float>(g.a, g.batch, g.m, g.k, a);
  f.b = dense_copy<T, float>(g.b, g.batch, g.k, g.n, b);
  MatrixRef c_ref{g.c, g.c_batch_stride, g.ldc, 1};
  if (g.beta != 0) {
    f.c = const_cast<void*>(dense_copy<T, float>(c_ref, g.batch, g.m, g.n, c).data);
  } else {
    c.reset(g.batch * g.m * g.n);
    f.c = c.get();
  }
  f.c_batch_stride = g.m * g.n;
  f.ldc = g.n;
  dispatch_gemm<float>(f);
  T* out = static_cast<T*>(g.c);
  parallel_for(0, g.batch * g.m, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(g.n, 1)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t r = begin; r < end; ++r)
                   convert_run(c.get() + r * g.n,
                               out + (r / g.m) * g.c_batch_stride + (r % g.m) * g.ldc, g.n);
               });
}

// The accumulator of the plain-loop product: integers wrap around as in C (unsigned arithmetic
// avoids signed overflow), float types accumulate as BLAS does (16-bit floats in float).
template <class T>
using LoopAcc = std::conditional_t<std::is_integral_v<T>, uint64_t,
                                   std::conditional_t<std::is_same_v<T, double>, double, float>>;

template <class T>
LoopAcc<T> to_acc(T v) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  else
    return static_cast<LoopAcc<T>>(static_cast<compute_t<T>>(v));
}

template <class T>
LoopAcc<T> scalar_acc(double v) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  else
    return static_cast<LoopAcc<T>>(v);
}

// Calls row(a_row, b_matrix, c_row) for every row of C of every matrix of the batch, rows in
// parallel: the frame of the plain loop kernels below.
template <class A, class C, class Row>
void for_each_c_row(const GemmArgs& g, const Row& row) {
  const A* a = static_cast<const A*>(g.a.data);
  const A* b = static_cast<const A*>(g.b.data);
  C* c = static_cast<C*>(g.c);
  parallel_for(0, g.batch * g.m,
               std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(g.n * g.k, 1)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t r = begin; r < end; ++r) {
                   const int64_t bi = r / g.m, i = r % g.m;
                   row(a + bi * g.a.batch_stride + i * g.a.row_stride, b + bi * g.b.batch_stride,
                       c + bi * g.c_batch_stride + i * g.ldc);
                 }
               });
}

// A plain loop: the integer kernel, and for float types the products too small for a BLAS call
// to pay for itself.
template <class T>
void loop_gemm(const GemmArgs& g) {
  using Acc = LoopAcc<T>;
  const Acc alpha = scalar_acc<T>(g.alpha), beta = scalar_acc<T>(g.beta);
  for_each_c_row<T, T>(g, [&](const T* arow, const T* bmat, T* crow) {
    for (int64_t j = 0; j < g.n; ++j) {
      Acc acc = 0;
      for (int64_t p = 0; p < g.k; ++p)
        acc += to_acc(arow[p * g.a.col_stride]) *
               to_acc(bmat[p * g.b.row_stride + j * g.b.col_stride]);
      const Acc out = g.beta == 0 ? alpha * acc : alpha * acc + beta * to_acc(crow[j]);
      crow[j] = static_cast<T>(out);
    }
  });
}

// float32 with B's rows contiguous on the register-blocked kernel of small_gemm.h, in tasks of 8
// rows of one matrix. Threads share out whole matrices only: one product is under 2^21
// multiply-adds (at most tens of microseconds), about what waking a sleeping thread costs.
void small_float_gemm(const GemmArgs& g) {
  constexpr int64_t kRows = 8;
  const int64_t blocks = (g.m + kRows - 1) / kRows;
  const float* a = static_cast<const float*>(g.a.data);
  const float* b = static_cast<const float*>(g.b.data);
  float* c = static_cast<float*>(g.c);
  const int64_t matrices_per_task =
      std::max<int64_t>(1, kSingleThreadedGemmWork / (g.m * g.n * g.k));
  parallel_for(0, g.batch * blocks, blocks * matrices_per_task, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t bi = t / blocks, row = (t % blocks) * kRows;
      const SmallGemm one{g.m,
                          g.n,
                          g.k,
                          a + bi * g.a.batch_stride,
                          g.a.row_stride,
                          g.a.col_stride,
                          b + bi * g.b.batch_stride,
                          g.b.row_stride,
                          c + bi * g.c_batch_stride,
                          g.ldc,
                          static_cast<float>(g.alpha),
                          static_cast<float>(g.beta)};
      small_sgemm_rows(one, row, std::min(g.m, row + kRows));
    }
  });
}

// small_float_gemm for any B: B with strided rows (a linear layer's transposed weight) is made
// dense first; its k x n copy is small next to the product.
void kiln_float_gemm(const GemmArgs& g) {
  if (g.b.col_stride == 1) return small_float_gemm(g);
  Owned<float> b_copy;
  GemmArgs dense = g;
  dense.b = dense_copy<float, float>(g.b, g.batch, g.k, g.n, b_copy);
  small_float_gemm(dense);
}

// The panels of kiln_gemm_by_panels: at most about 32K floats of C (L2-resident while the
// epilogue reads them), as many for each thread, a whole number of the kernel's 8-row blocks.
int64_t panel_rows(const GemmArgs& g) {
  const int64_t per_thread = (g.m + num_threads() - 1) / num_threads();
  const int64_t cached = std::max<int64_t>(8, 32768 / std::max<int64_t>(g.n, 1));
  const int64_t panels_per_thread = (per_thread + cached - 1) / cached;
  const int64_t rows = (per_thread + panels_per_thread - 1) / panels_per_thread;
  return std::min((rows + 7) / 8 * 8, g.m);
}

// float32 products of at least this many multiply-adds go to oneDNN (dispatch_gemm).
constexpr int64_t kOneDnnMinWork = int64_t{1} << 21;

// _int_mm's product where oneDNN has none: int8 operands, int32 sums (wrapping as C's int32
// does), rows in parallel; with B's rows contiguous the inner loop vectorises.
void int8_gemm(const GemmArgs& g) {
  // In uint32, where wrapping around is defined.
  for_each_c_row<int8_t, uint32_t>(g, [&](const int8_t* arow, const int8_t* bmat, uint32_t* crow) {
    std::fill(crow, crow + g.n, 0u);
    for (int64_t p = 0; p < g.k; ++p) {
      const auto x = static_cast<uint32_t>(static_cast<int32_t>(arow[p * g.a.col_stride]));
      const int8_t* brow = bmat + p * g.b.row_stride;
      for (int64_t j = 0; j < g.n; ++j)
        crow[j] += x * static_cast<uint32_t>(static_cast<int32_t>(brow[j * g.b.col_stride]));
    }
  });
}

bool is_int_mm(const GemmArgs& g) { return g.dtype == kInt8 && g.c_dtype == kInt32; }

// Products of at most this many multiply-adds per matrix skip BLAS/oneDNN: the call (and, for
// 16-bit floats, the conversions) cost more than the arithmetic.
constexpr int64_t kTinyGemmWork = 32;

template <class T>
void dispatch_gemm(const GemmArgs& g) {
  if (g.k == 0) return scale_c<T>(g);
  if constexpr (std::is_integral_v<T>) {
    loop_gemm<T>(g);
  } else if (g.m * g.n * g.k <= kTinyGemmWork) {
    loop_gemm<T>(g);
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    // float32 goes to oneDNN from about 128^3 multiply-adds: its AVX-512 kernels ran 1.6-2x
    // faster than OpenBLAS's AVX2 Zen core on an AMD EPYC from 128^3 to 1024^3, and 2-5x
    // faster than the generic Prescott core OpenBLAS falls back to on CPUs newer than its
    // build. Below that, waking oneDNN's threads costs more (80 us for a 32 x 32 product) than
    // the arithmetic, and Kiln's own vector kernel takes it.
    // max-autotune times all three per product (kiln/compile/codegen/gemm_autotune.h).
    if constexpr (std::is_same_v<T, float>) {
      const bool large = g.m * g.n * g.k >= kOneDnnMinWork;
      if (large && onednn::matmul(g)) return;
      if (!large) return kiln_float_gemm(g);
    }
    blas_gemm<T>(g);
  } else {
    if (!onednn::matmul(g)) converted_gemm<T>(g);
  }
}

thread_local GemmInterceptor gemm_interceptor = nullptr;

}  // namespace

const char* to_string(GemmImpl impl) {
  switch (impl) {
    case GemmImpl::OpenBlas:
      return "openblas";
    case GemmImpl::OneDnn:
      return "onednn";
    case GemmImpl::Kiln:
      return "kiln";
    case GemmImpl::Converted:
      return "converted";
  }
  return "?";
}

std::vector<GemmImpl> gemm_candidates(const GemmArgs& g) {
  if (g.k == 0 || g.m * g.n * g.k <= kTinyGemmWork) return {};
  if (is_int_mm(g))
    return onednn::has_matmul(kInt8) ? std::vector<GemmImpl>{GemmImpl::OneDnn, GemmImpl::Kiln}
                                     : std::vector<GemmImpl>{};
  switch (g.dtype) {
    case kFloat32: {
      std::vector<GemmImpl> c = {GemmImpl::OpenBlas, GemmImpl::Kiln};
      if (onednn::has_matmul(kFloat32)) c.push_back(GemmImpl::OneDnn);
      return c;
    }
    case kBFloat16:
    case kFloat16:
      if (onednn::has_matmul(g.dtype)) return {GemmImpl::OneDnn, GemmImpl::Converted};
      return {};
    default:
      return {};
  }
}

bool gemm_with(GemmImpl impl, const GemmArgs& g) {
  if (g.batch == 0 || g.m == 0 || g.n == 0) return true;
  if (is_int_mm(g)) {
    if (impl == GemmImpl::OneDnn) return onednn::matmul(g);
    if (impl != GemmImpl::Kiln) return false;
    int8_gemm(g);
    return true;
  }
  const bool f32 = g.dtype == kFloat32, half = g.dtype == kBFloat16 || g.dtype == kFloat16;
  switch (impl) {
    case GemmImpl::OpenBlas:
      if (!f32) return false;
      blas_gemm<float>(g);
      return true;
    case GemmImpl::Kiln:
      if (!f32) return false;
      kiln_float_gemm(g);
      return true;
    case GemmImpl::OneDnn:
      return (f32 || half) && onednn::matmul(g);
    case GemmImpl::Converted:
      if (g.dtype == kBFloat16)
        converted_gemm<BFloat16>(g);
      else if (g.dtype == kFloat16)
        converted_gemm<Half>(g);
      else
        return false;
      return true;
  }
  return false;
}

bool is_kiln_gemm_default(const GemmArgs& g) {
  return g.dtype == kFloat32 && g.k > 0 && g.m * g.n * g.k < kOneDnnMinWork;
}

bool kiln_gemm_by_panels(const GemmArgs& g, PanelFn after_panel, void* ctx) {
  if (g.dtype != kFloat32 || g.ldc != g.n || (g.batch > 1 && g.c_batch_stride != g.m * g.n))
    return false;
  if (g.batch == 0 || g.m == 0 || g.n == 0) return true;
  // B packed in strips of kStrip columns, each k x kStrip dense: the kernel then streams B in
  // order, whatever B's layout (a linear layer's weight is transposed).
  constexpr int64_t kStrip = 32;
  const int64_t copies = g.b.batch_stride == 0 ? 1 : g.batch;
  const int64_t strips = (g.n + kStrip - 1) / kStrip;
  Owned<float> packed;
  packed.reset(copies * g.k * g.n);
  const float* b = static_cast<const float*>(g.b.data);
  parallel_for(0, copies * strips, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t copy = t / strips, j0 = (t % strips) * kStrip;
      const int64_t w = std::min(kStrip, g.n - j0);
      const float* src = b + copy * g.b.batch_stride + j0 * g.b.col_stride;
      float* dst = packed.get() + copy * g.k * g.n + j0 * g.k;
      for (int64_t p = 0; p < g.k; ++p)
        for (int64_t j = 0; j < w; ++j)
          dst[p * w + j] = src[p * g.b.row_stride + j * g.b.col_stride];
    }
  });
  const int64_t rows = panel_rows(g), panels = (g.m + rows - 1) / rows;
  const float* a = static_cast<const float*>(g.a.data);
  float* c = static_cast<float*>(g.c);
  const int64_t grain =
      std::max<int64_t>(1, kSingleThreadedGemmWork / std::max<int64_t>(rows * g.n * g.k, 1));
  parallel_for(0, g.batch * panels, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t bi = t / panels, row = (t % panels) * rows, row_end = std::min(g.m, row + rows);
      float* cm = c + bi * g.m * g.n;
      if (g.k == 0) {
        for (int64_t i = row * g.n; i < row_end * g.n; ++i)
          cm[i] = g.beta == 0 ? 0.0f : static_cast<float>(g.beta) * cm[i];
      }
      for (int64_t j0 = 0; g.k > 0 && j0 < g.n; j0 += kStrip) {
        const int64_t w = std::min(kStrip, g.n - j0);
        const SmallGemm strip{g.m,
                              w,
                              g.k,
                              a + bi * g.a.batch_stride,
                              g.a.row_stride,
                              g.a.col_stride,
                              packed.get() + (copies == 1 ? 0 : bi) * g.k * g.n + j0 * g.k,
                              w,
                              cm + j0,
                              g.ldc,
                              static_cast<float>(g.alpha),
                              static_cast<float>(g.beta)};
        small_sgemm_rows(strip, row, row_end);
      }
      after_panel(ctx, bi * g.m + row, bi * g.m + row_end);
    }
  });
  return true;
}

GemmInterceptor set_gemm_interceptor(GemmInterceptor interceptor) {
  std::swap(gemm_interceptor, interceptor);
  return interceptor;
}

void gemm(const GemmArgs& g) {
  if (g.batch == 0 || g.m == 0 || g.n == 0) return;
  if (gemm_interceptor && gemm_interceptor(g)) return;
  if (g.c_dtype != ScalarType::Undefined && g.c_dtype != g.dtype) {
    KILN_CHECK(is_int_mm(g) && g.alpha == 1 && g.beta == 0,
               "matmul: internal error: no product of ", g.dtype, " into ", g.c_dtype);
    if (!onednn::matmul(g)) int8_gemm(g);
    return;
  }
  visit_numeric(g.dtype, "matmul", [&](auto tag) { dispatch_gemm<decltype(tag)>(g); });
}

void dot(ScalarType dtype, int64_t n, const void* x, int64_t incx, const void* y, int64_t incy,
         void* out) {
  visit_numeric(dtype, "dot", [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x);
    const T* py = static_cast<const T*>(y);
    T* o = static_cast<T*>(out);
    const bool blas_strides =
        incx != 0 && incy != 0 && n <= INT_MAX && incx <= INT_MAX && incy <= INT_MAX;
    if constexpr (std::is_same_v<T, float>) {
      if (blas_strides) {
        sync_blas_threads(n);
        *o =
            cblas_sdot(static_cast<int>(n), px, static_cast<int>(incx), py, static_cast<int>(incy));
        return;
      }
    } else if constexpr (std::is_same_v<T, double>) {
      if (blas_strides) {
        sync_blas_threads(n);
        *o =
            cblas_ddot(static_cast<int>(n), px, static_cast<int>(incx), py, static_cast<int>(incy));
        return;
      }
    }
    if constexpr (std::is_integral_v<T>) {
      uint64_t acc = 0;
      for (int64_t i = 0; i < n; ++i)
        acc += static_cast<uint64_t>(static_cast<int64_t>(px[i * incx])) *
               static_cast<uint64_t>(static_cast<int64_t>(py[i * incy]));
      *o = static_cast<T>(acc);
    } else {
      compute_t<T> acc = 0;
      for (int64_t i = 0; i < n; ++i)
        acc += static_cast<compute_t<T>>(px[i * incx]) * static_cast<compute_t<T>>(py[i * incy]);
      *o = static_cast<T>(acc);
    }
  });
}

void sync_blas_threads(int64_t work) {
  static std::atomic<int> current{-1};
  static const bool own_pool = openblas_get_parallel() == 1;  // the pthreads build
  const int want = own_pool && work < kOwnBlasPoolMinWork ? 1 : num_threads();
  if (current.load(std::memory_order_relaxed) != want) {
    openblas_set_num_threads(want);
    current.store(want, std::memory_order_relaxed);
  }
}

std::string f32_gemm_path() {
  const std::string large =
      onednn::has_matmul(kFloat32)
          ? "oneDNN matmul primitive"
          : "OpenBLAS sgemm (" + std::string(openblas_get_corename()) + " kernels)";
  return "Kiln's vector kernel below 2^21 multiply-adds, " + large + " above";
}

const char* bf16_gemm_path() {
  return onednn::has_matmul(kBFloat16) ? "oneDNN matmul primitive"
                                       : "float32 OpenBLAS sgemm on converted copies (oneDNN has "
                                         "no bf16 matmul for this CPU)";
}

}  // namespace kiln::cpu
