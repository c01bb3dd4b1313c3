#include "kiln/ops/linalg/util.h"

#include <cmath>

#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln::linalg {

void check_same_dtype(const char* op, const char* name_a, const Tensor& a, const char* name_b,
                      const Tensor& b) {
  KILN_CHECK(a.dtype() == b.dtype(), op, ": expected ", name_a, " and ", name_b,
             " to have the same dtype, but got ", a.dtype(), " and ", b.dtype());
}

void check_inner_dims(const char* op, const Tensor& a, const SymInt& a_k, const Tensor& b,
                      const SymInt& b_k) {
  KILN_CHECK(a_k == b_k, op, ": cannot multiply ", a.sym_sizes(), " by ", b.sym_sizes(), ": ", a_k,
             " != ", b_k);
}

void check_integral_scalars(const char* op, ScalarType dtype, const Scalar& beta,
                            const Scalar& alpha) {
  if (!is_integral(dtype, true)) return;
  for (auto [name, s] : {std::pair{"beta", beta}, std::pair{"alpha", alpha}}) {
    double v = s.to_double();
    KILN_CHECK(v == std::floor(v), op, ": for integral input tensors, argument ", name,
               " must not be a floating point number (got ", v, ")");
  }
}

cpu::MatrixRef matrix_ref(const Tensor& t, int64_t offset) {
  const int64_t nd = t.dim();
  const TensorImpl& i = *t.impl();
  const char* data = static_cast<const char*>(t.data_ptr()) +
                     offset * static_cast<int64_t>(element_size(t.dtype()));
  return {data, nd >= 3 ? i.sym_strides()[nd - 3].guard_int() : 0,
          i.sym_strides()[nd - 2].guard_int(), i.sym_strides()[nd - 1].guard_int()};
}

void gemm_into(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta) {
  const int64_t nd = out.dim();
  const TensorImpl& o = *out.impl();
  cpu::GemmArgs g;
  g.dtype = out.dtype();
  g.batch = nd >= 3 ? o.sym_sizes()[nd - 3].guard_int() : 1;
  g.m = o.sym_sizes()[nd - 2].guard_int();
  g.n = o.sym_sizes()[nd - 1].guard_int();
  g.k = a.impl()->sym_sizes()[a.dim() - 1].guard_int();
  g.c_batch_stride = nd >= 3 ? o.sym_strides()[nd - 3].guard_int() : 0;
  g.ldc = o.sym_strides()[nd - 2].guard_int();
  g.alpha = alpha;
  g.beta = beta;
  // Dims before the batch dim (a [B, H, T, D] view of [B, T, H, D], whose batch dims do not
  // flatten into one stride): one batched gemm per index of them.
  int64_t outer = 1;
  for (int64_t d = 0; d + 3 < nd; ++d) outer *= o.sym_sizes()[d].guard_int();
  if (outer == 0 || g.batch == 0 || g.m == 0 || g.n == 0) return;
  const size_t es = element_size(out.dtype());
  for (int64_t q = 0; q < outer; ++q) {
    int64_t rest = q, off_a = 0, off_b = 0, off_c = 0;
    for (int64_t d = nd - 4; d >= 0; --d) {
      const int64_t size = o.sym_sizes()[d].guard_int(), i = rest % size;
      rest /= size;
      off_a += i * a.impl()->sym_strides()[d].guard_int();
      off_b += i * b.impl()->sym_strides()[d].guard_int();
      off_c += i * o.sym_strides()[d].guard_int();
    }
    g.a = matrix_ref(a, off_a);
    g.b = matrix_ref(b, off_b);
    g.c = static_cast<char*>(out.data_ptr()) + off_c * static_cast<int64_t>(es);
    cpu::gemm(g);
  }
}

Tensor reference_matmul(const Tensor& a_in, const Tensor& b_in) {
  const bool batched = a_in.dim() == 3;
  Tensor a = a_in.to(kFloat64).contiguous(), b = b_in.to(kFloat64).contiguous();
  const int64_t batch = batched ? a.sym_size(0).guard_int() : 1;
  const int64_t m = a.sym_size(-2).guard_int(), k = a.sym_size(-1).guard_int(),
                n = b.sym_size(-1).guard_int();
  Tensor out = batched ? zeros({batch, m, n}, kFloat64) : zeros({m, n}, kFloat64);
  const double* pa = a.data_ptr<double>();
  const double* pb = b.data_ptr<double>();
  double* po = out.data_ptr<double>();
  for (int64_t q = 0; q < batch; ++q)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += pa[(q * m + i) * k + p] * pb[(q * k + p) * n + j];
        po[(q * m + i) * n + j] = acc;
      }
  return out;
}

std::vector<MatmulOperands> matmul_operands(ScalarType dt, int64_t batch) {
  using samples::make;
  auto shape = [batch](int64_t r, int64_t c) {
    return batch > 0 ? std::vector<int64_t>{batch, r, c} : std::vector<int64_t>{r, c};
  };
  auto transposed = [&](int64_t r, int64_t c) { return make(shape(c, r), dt).transpose(-1, -2); };
  std::vector<MatmulOperands> s = {
      {make(shape(3, 4), dt), make(shape(4, 5), dt), "plain"},
      {transposed(3, 4), make(shape(4, 5), dt), "transposed a"},
      {make(shape(3, 4), dt), transposed(4, 5), "transposed b"},
      {transposed(3, 4), transposed(4, 5), "both transposed"},
      {make(shape(3, 4), dt, -3, 3, true), make(shape(4, 5), dt, -3, 3, true),
       "non-contiguous rows"},
      {make(shape(1, 4), dt).expand(shape(3, 4)), make(shape(4, 5), dt), "0-stride rows", true},
      {make(shape(3, 0), dt), make(shape(0, 5), dt), "zero-size k"},
      {make(shape(0, 4), dt), make(shape(4, 5), dt), "zero-size m"},
      {make(shape(1, 6), dt), make(shape(6, 1), dt), "row times column"},
      {make(shape(17, 33), dt), transposed(33, 9), "larger"},
  };
  if (batch > 0) {
    s.push_back(
        {make({1, 3, 4}, dt).expand({batch, 3, 4}), make(shape(4, 5), dt), "0-stride batch", true});
    s.push_back({make({3, batch, 4}, dt).permute(std::vector<int64_t>{1, 0, 2}),
                 make(shape(4, 5), dt), "permuted batch"});
    s.push_back({make({0, 3, 4}, dt), make({0, 4, 5}, dt), "zero batch"});
  }
  return s;
}

}  // namespace kiln::linalg
