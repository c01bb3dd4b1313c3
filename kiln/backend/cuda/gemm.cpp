// mm, bmm, addmm and baddbmm on cuBLAS. Row-major C = A B is column-major C^T = B^T A^T, so
// cuBLAS multiplies the operands in swapped order; an operand whose rows or columns are
// contiguous is read in place (transposed as needed), any other layout is copied first.
#include "kiln/backend/cuda/gemm.h"

#include <cublas_v2.h>

#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "kiln/backend/cuda/runtime.h"
#include "kiln/core/cpu_fallback.h"
#include "kiln/core/error.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/registry.h"

namespace kiln::cuda {
namespace {

void check_blas(cublasStatus_t s, const char* what) {
  KILN_CHECK(s == CUBLAS_STATUS_SUCCESS, what, ": cuBLAS error ", cublasGetStatusName(s), ": ",
             cublasGetStatusString(s));
}

// cuBLAS's workspace: its own per stream (kernels on two streams may run at once), allocated
// once and kept, so that products captured into a CUDA graph never allocate (cublasSetStream
// would otherwise put back cuBLAS's default workspace).
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

cublasHandle_t handle() {
  static std::mutex m;
  static std::vector<cublasHandle_t> handles;
  static std::map<std::pair<int, cudaStream_t>, void*> workspaces;
  const int d = detail::current_device();
  const cudaStream_t stream = detail::current_stream();
  std::lock_guard<std::mutex> lock(m);
  if (handles.size() <= static_cast<size_t>(d)) handles.resize(d + 1, nullptr);
  if (!handles[d]) check_blas(cublasCreate(&handles[d]), "cuda: cublasCreate");
  check_blas(cublasSetStream(handles[d], stream), "cuda: cublasSetStream");
  void*& ws = workspaces[{d, stream}];
  if (!ws) detail::check(cudaMalloc(&ws, kWorkspaceBytes), "cuda: cuBLAS workspace");
  check_blas(cublasSetWorkspace(handles[d], ws, kWorkspaceBytes), "cuda: cublasSetWorkspace");
  return handles[d];
}

// One operand as cuBLAS reads it: its (batched) matrix in column-major terms.
struct Operand {
  Tensor t;            // the tensor read (maybe a contiguous copy)
  bool trans = false;  // cuBLAS must transpose it
  int64_t ld = 0, batch_stride = 0;
};

// A row-major [.., r, c] operand as the column-major [c, r] matrix cuBLAS sees.
Operand operand(const Tensor& x) {
  const int64_t n = x.dim();
  const int64_t r = x.size(n - 2), c = x.size(n - 1);
  Tensor t = x;
  auto rows_contiguous = [&] {
    return t.stride(n - 1) == 1 && t.stride(n - 2) >= std::max<int64_t>(c, 1);
  };
  auto cols_contiguous = [&] {
    return t.stride(n - 2) == 1 && t.stride(n - 1) >= std::max<int64_t>(r, 1);
  };
  if (!rows_contiguous() && !cols_contiguous()) t = t.contiguous();
  Operand o;
  o.t = t;
  if (rows_contiguous()) {
    o.trans = false;
    o.ld = std::max<int64_t>(t.stride(n - 2), 1);
  } else {
    o.trans = true;
    o.ld = std::max<int64_t>(t.stride(n - 1), 1);
  }
  o.batch_stride = n == 3 ? t.stride(0) : 0;
  return o;
}

cudaDataType_t data_type(ScalarType dt, const char* op) {
  switch (dt) {
    case kFloat32:
      return CUDA_R_32F;
    case kFloat64:
      return CUDA_R_64F;
    case kFloat16:
      return CUDA_R_16F;
    case kBFloat16:
      return CUDA_R_16BF;
    default:
      KILN_FAIL(op, ": no CUDA kernel for dtype ", dtype_name(dt));
  }
}

// out = alpha a b + beta out, over a batch when the operands are 3-D.
void gemm(const char* op, Tensor& out, const Tensor& a, const Tensor& b, double alpha,
          double beta) {
  const int64_t n = out.dim();
  const int64_t m = out.size(n - 2), cols = out.size(n - 1), k = a.size(n - 1);
  const int64_t batch = n == 3 ? out.size(0) : 1;
  if (out.numel() == 0) return;
  KILN_CHECK(out.is_contiguous(), op, ": expected a contiguous output");
  if (k == 0) {
    if (beta == 0)
      out.zero_();
    else if (beta != 1)
      out.mul_(beta);
    return;
  }
  Operand A = operand(a), B = operand(b);
  const ScalarType dt = out.dtype();
  const cudaDataType_t type = data_type(dt, op);
  const bool is_double = dt == kFloat64;
  const cublasComputeType_t compute = is_double ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  const float alpha_f = static_cast<float>(alpha), beta_f = static_cast<float>(beta);
  const void* alpha_p = is_double ? static_cast<const void*>(&alpha) : &alpha_f;
  const void* beta_p = is_double ? static_cast<const void*>(&beta) : &beta_f;
  // Column-major: C^T [cols, m] = B^T [cols, k] * A^T [k, m].
  check_blas(cublasGemmStridedBatchedEx(handle(), B.trans ? CUBLAS_OP_T : CUBLAS_OP_N,
                                        A.trans ? CUBLAS_OP_T : CUBLAS_OP_N, cols, m, k, alpha_p,
                                        B.t.data_ptr(), type, B.ld, B.batch_stride, A.t.data_ptr(),
                                        type, A.ld, A.batch_stride, beta_p, out.data_ptr(), type,
                                        cols, m * cols, batch, compute, CUBLAS_GEMM_DEFAULT),
             op);
}

void product_kernel(const char* op, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  gemm(op, out[0], in[0], in[1], 1.0, 0.0);
}

void add_product_kernel(const char* op, const std::vector<Tensor>& in, std::vector<Tensor>& out,
                        const Attrs& attrs) {
  const double beta = attrs.scalar(0).to_double(), alpha = attrs.scalar(1).to_double();
  Tensor result = out[0];
  if (beta != 0) result.copy_(in[0].detach().expand(result.sizes()));  // beta == 0 ignores self
  gemm(op, result, in[1], in[2], alpha, beta);
}

bool is_float(const std::vector<Tensor>& in) {
  const ScalarType dt = in.back().dtype();
  return dt == kFloat32 || dt == kFloat64 || dt == kFloat16 || dt == kBFloat16;
}

}  // namespace

void register_gemm_kernels() {
  // Integer products have no cuBLAS routine: they run through the CPU fallback.
  auto kernel = [](const char* name, auto body) {
    set_kernel(
        name, kCUDA,
        [name, body](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
          if (is_float(in)) return body(name, in, out, a);
          run_on_cpu(get_op(name), Device(kCUDA, detail::current_device()), in, out, a);
        });
  };
  auto product = [](const char* name, const std::vector<Tensor>& in, std::vector<Tensor>& out,
                    const Attrs&) { product_kernel(name, in, out); };
  kernel("mm", product);
  kernel("bmm", product);
  kernel("addmm", add_product_kernel);
  kernel("baddbmm", add_product_kernel);
}

}  // namespace kiln::cuda
