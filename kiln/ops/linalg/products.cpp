// mm, bmm, addmm, baddbmm: the matrix-product entries every other linear-algebra op builds on.
#include <limits>

#include "kiln/backend/cpu/copy.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/linalg/util.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

const std::vector<ScalarType> kProductDtypes = {kFloat64, kFloat32, kBFloat16,
                                                kFloat16, kInt64,   kInt32};

// The shape of a @ b for 2-D (nd = 2) or batched 3-D (nd = 3) operands, after checking them.
SymShape product_shape(const char* op, const char* name_a, const Tensor& a, const char* name_b,
                       const Tensor& b, int64_t nd) {
  KILN_CHECK(a.dim() == nd, op, ": expected ", name_a, " to be a ", nd, "-D tensor, but got a ",
             a.dim(), "-D tensor of shape ", a.sym_sizes());
  KILN_CHECK(b.dim() == nd, op, ": expected ", name_b, " to be a ", nd, "-D tensor, but got a ",
             b.dim(), "-D tensor of shape ", b.sym_sizes());
  linalg::check_same_dtype(op, name_a, a, name_b, b);
  KILN_CHECK(a.dtype() != kBool, op, ": not supported for dtype bool");
  if (nd == 3) {
    KILN_CHECK(a.sym_size(0) == b.sym_size(0), op, ": ", name_a, " and ", name_b,
               " must have the same number of batches, but got ", a.sym_size(0), " and ",
               b.sym_size(0));
  }
  linalg::check_inner_dims(op, a, a.sym_size(-1), b, b.sym_size(-2));
  if (nd == 3) return {a.sym_size(0), a.sym_size(1), b.sym_size(2)};
  return {a.sym_size(0), b.sym_size(1)};
}

MetaFn product_meta(const char* op, int64_t nd) {
  return [op, nd](const std::vector<Tensor>& in, const Attrs&) {
    SymShape shape = product_shape(op, "self", in[0], "mat2", in[1], nd);
    return meta::one_spec(std::move(shape), in[0].dtype(), in[0].device());
  };
}

// addmm/baddbmm: self broadcasts to the product's shape.
MetaFn add_product_meta(const char* op, int64_t nd) {
  return [op, nd](const std::vector<Tensor>& in, const Attrs& attrs) {
    const char* na = nd == 3 ? "batch1" : "mat1";
    const char* nb = nd == 3 ? "batch2" : "mat2";
    SymShape shape = product_shape(op, na, in[1], nb, in[2], nd);
    const Tensor& self = in[0];
    linalg::check_same_dtype(op, "self", self, na, in[1]);
    bool fits = self.dim() <= nd;
    for (int64_t d = 0; fits && d < self.dim(); ++d) {
      const SymInt& s = self.sym_size(d);
      fits = s == 1 || s == shape[nd - self.dim() + d];
    }
    KILN_CHECK(fits, op, ": self of shape ", self.sym_sizes(),
               " cannot be broadcast to the product's shape ", SymIntArrayRef(shape));
    linalg::check_integral_scalars(op, self.dtype(), attrs.scalar(0), attrs.scalar(1));
    return meta::one_spec(std::move(shape), self.dtype(), self.device());
  };
}

void product_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
  linalg::gemm_into(out[0], in[0], in[1], 1, 0);
}

void add_product_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out,
                        const Attrs& attrs) {
  const double beta = attrs.scalar(0).to_double(), alpha = attrs.scalar(1).to_double();
  if (beta != 0) cpu::copy(out[0], in[0]);  // beta == 0 ignores self, NaNs included
  linalg::gemm_into(out[0], in[1], in[2], alpha, beta);
}

Tensor scaled(const Tensor& t, const Scalar& s) { return s.to_double() == 1 ? t : t * s; }

// Whether t is laid out as the transpose of a contiguous matrix (or batch of them), as
// linear's weight.t() is. Its gradient is then computed in that layout too, (x^T)^T, so that it
// reaches the parameter contiguous and accumulates and updates without a copy.
bool transposed_layout(const Tensor& t) { return !t.is_contiguous() && t.mT().is_contiguous(); }

// p @ q for 2-D or batched operands.
Tensor product(const Tensor& p, const Tensor& q) { return p.dim() == 3 ? p.bmm(q) : p.mm(q); }

// d(a @ b): grad @ b^T and a^T @ grad, times alpha, each in its operand's layout.
Tensor grad_a(const Tensor& grad, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  if (transposed_layout(a)) return scaled(product(b, grad.mT()).mT(), alpha);
  return scaled(product(grad, b.mT()), alpha);
}
Tensor grad_b(const Tensor& grad, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  if (transposed_layout(b)) return scaled(product(grad.mT(), a).mT(), alpha);
  return scaled(product(a.mT(), grad), alpha);
}

std::vector<Tensor> product_backward(const BackwardContext& c) {
  const Tensor &a = c.input(0), &b = c.input(1);
  return {c.needs_grad(0) ? grad_a(c.grad(), a, b, 1) : Tensor(),
          c.needs_grad(1) ? grad_b(c.grad(), a, b, 1) : Tensor()};
}

std::vector<Tensor> add_product_backward(const BackwardContext& c) {
  const Scalar beta = c.attrs.scalar(0), alpha = c.attrs.scalar(1);
  return {c.needs_grad(0) ? scaled(c.grad(), beta) : Tensor(),  // autograd sums it to self's shape
          c.needs_grad(1) ? grad_a(c.grad(), c.input(1), c.input(2), alpha) : Tensor(),
          c.needs_grad(2) ? grad_b(c.grad(), c.input(1), c.input(2), alpha) : Tensor()};
}

std::vector<OpSample> product_samples(ScalarType dt, int64_t batch) {
  std::vector<OpSample> s;
  for (auto& o : linalg::matmul_operands(dt, batch))
    s.push_back({{o.a, o.b}, {}, o.desc, /*check_grad=*/!o.aliased});
  return s;
}

std::vector<OpSample> add_product_samples(ScalarType dt, int64_t batch) {
  using samples::make;
  const bool fp = is_floating_point(dt);
  const Scalar beta = fp ? Scalar(0.5) : Scalar(2), alpha = fp ? Scalar(-1.5) : Scalar(3);
  auto shape = [batch](int64_t r, int64_t c) {
    return batch > 0 ? std::vector<int64_t>{batch, r, c} : std::vector<int64_t>{r, c};
  };
  std::vector<OpSample> s = {
      {{make(shape(3, 5), dt), make(shape(3, 4), dt), make(shape(4, 5), dt)},
       {Scalar(1), Scalar(1)},
       "full self"},
      {{make({5}, dt), make(shape(3, 4), dt), make(shape(4, 5), dt)},
       {beta, alpha},
       "bias row, beta and alpha"},
      {{make({3, 1}, dt), make(shape(4, 3), dt).transpose(-1, -2),
        make(shape(5, 4), dt).transpose(-1, -2)},
       {Scalar(1), alpha},
       "column self, transposed operands"},
      {{make({}, dt), make(shape(3, 4), dt, -3, 3, true), make(shape(4, 5), dt)},
       {beta, Scalar(1)},
       "0-dim self, non-contiguous mat1"},
      {{make(shape(3, 5), dt), make(shape(3, 0), dt), make(shape(0, 5), dt)},
       {beta, alpha},
       "zero-size k"},
  };
  if (fp) {
    s.push_back({{full(shape(3, 5), std::numeric_limits<double>::quiet_NaN(), dt),
                  make(shape(3, 4), dt), make(shape(4, 5), dt)},
                 {Scalar(0), Scalar(1)},
                 "beta 0 ignores nan self"});
  }
  return s;
}

Tensor reference_add_product(const std::vector<Tensor>& in, const Attrs& attrs) {
  const double beta = attrs.scalar(0).to_double(), alpha = attrs.scalar(1).to_double();
  Tensor r = linalg::reference_matmul(in[1], in[2]) * alpha;
  if (beta != 0) r = r + in[0].to(kFloat64) * beta;
  return r;
}

// The operand checks of the products over `batch` matrices (0: mm); add: addmm/baddbmm, whose
// operands follow self and whose attributes are beta and alpha.
std::vector<OpErrorSample> product_error_samples(int64_t batch, bool add) {
  using samples::make;
  using V = std::vector<int64_t>;
  auto shape = [batch](V rc) {
    if (batch > 0) rc.insert(rc.begin(), batch);
    return rc;
  };
  const char* na = add ? (batch ? "batch1" : "mat1") : "self";
  const char* nb = add ? (batch ? "batch2" : "mat2") : "mat2";
  const Tensor self = make(shape({2, 5}), kFloat32);
  const Attrs ones{Scalar(1), Scalar(1)}, none;
  auto in = [&](Tensor a, Tensor b) {
    return add ? std::vector<Tensor>{self, std::move(a), std::move(b)}
               : std::vector<Tensor>{std::move(a), std::move(b)};
  };
  const Attrs& a = add ? ones : none;
  const Tensor x = make(shape({2, 3}), kFloat32), y = make(shape({3, 5}), kFloat32);
  const std::string rank = batch ? "3-D" : "2-D";
  std::vector<OpErrorSample> s = {
      {in(make({2, 3, 4, 4}, kFloat32), y), a,
       detail::str_cat("expected ", na, " to be a ", rank,
                       " tensor, but got a 4-D tensor of shape "
                       "[2, 3, 4, 4]"),
       "first operand's rank"},
      {in(x, make({3}, kFloat32)), a,
       detail::str_cat("expected ", nb, " to be a ", rank,
                       " tensor, but got a 1-D tensor of shape [3]"),
       "second operand's rank"},
      {in(x, y.to(kFloat64)), a,
       detail::str_cat("expected ", na, " and ", nb,
                       " to have the same dtype, but got float32 and float64"),
       "dtypes"},
      {in(x.to(kBool), y.to(kBool)), a, "not supported for dtype bool", "bool"},
      {in(x, make(shape({4, 5}), kFloat32)), a,
       batch ? "cannot multiply [2, 2, 3] by [2, 4, 5]: 3 != 4"
             : "cannot multiply [2, 3] by [4, 5]: 3 != 4",
       "inner sizes"},
  };
  if (batch)
    s.push_back({in(x, make({3, 3, 5}, kFloat32)), a,
                 "must have the same number of batches, but got 2 and 3", "batches"});
  if (add) {
    s.push_back({{self.to(kFloat64), x, y},
                 a,
                 detail::str_cat("expected self and ", na,
                                 " to have the same dtype, but got float64 and float32"),
                 "self's dtype"});
    s.push_back({{make({3}, kFloat32), x, y},
                 a,
                 batch ? "self of shape [3] cannot be broadcast to the product's shape [2, 2, 5]"
                       : "self of shape [3] cannot be broadcast to the product's shape [2, 5]",
                 "self's shape"});
    s.push_back({{self.to(kInt64), x.to(kInt64), y.to(kInt64)},
                 {Scalar(1), Scalar(0.5)},
                 "argument alpha must not be a floating point number (got 0.5)",
                 "fractional alpha for integers"});
  }
  return s;
}

}  // namespace

KILN_REGISTER_OP(mm)
    .schema("mm(Tensor self, Tensor mat2) -> Tensor")
    .meta(product_meta("mm", 2))
    .cpu(product_kernel)
    .backward(product_backward)
    .samples([](ScalarType dt) { return product_samples(dt, 0); })
    .error_samples([] { return product_error_samples(0, false); })
    .reference([](const std::vector<Tensor>& in, const Attrs&) {
      return std::vector<Tensor>{linalg::reference_matmul(in[0], in[1])};
    })
    .dtypes(kProductDtypes)
    .lowering("extern:mm");

KILN_REGISTER_OP(bmm)
    .schema("bmm(Tensor self, Tensor mat2) -> Tensor")
    .meta(product_meta("bmm", 3))
    .cpu(product_kernel)
    .backward(product_backward)
    .samples([](ScalarType dt) { return product_samples(dt, 2); })
    .error_samples([] { return product_error_samples(2, false); })
    .reference([](const std::vector<Tensor>& in, const Attrs&) {
      return std::vector<Tensor>{linalg::reference_matmul(in[0], in[1])};
    })
    .dtypes(kProductDtypes)
    .lowering("extern:bmm");

KILN_REGISTER_OP(addmm)
    .schema(
        "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor")
    .meta(add_product_meta("addmm", 2))
    .cpu(add_product_kernel)
    .save_inputs({1, 2})  // the factors, not self
    .backward(add_product_backward)
    .samples([](ScalarType dt) { return add_product_samples(dt, 0); })
    .error_samples([] { return product_error_samples(0, true); })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      return std::vector<Tensor>{reference_add_product(in, a)};
    })
    .dtypes(kProductDtypes)
    .lowering("extern:addmm");

KILN_REGISTER_OP(baddbmm)
    .schema(
        "baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> "
        "Tensor")
    .meta(add_product_meta("baddbmm", 3))
    .cpu(add_product_kernel)
    .save_inputs({1, 2})  // the factors, not self
    .backward(add_product_backward)
    .samples([](ScalarType dt) { return add_product_samples(dt, 2); })
    .error_samples([] { return product_error_samples(2, true); })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      return std::vector<Tensor>{reference_add_product(in, a)};
    })
    .dtypes(kProductDtypes)
    .lowering("extern:baddbmm");

Tensor mm(const Tensor& self, const Tensor& mat2) {
  static const OpDef& op = get_op("mm");
  return call_op1(op, {self, mat2}, {});
}
Tensor bmm(const Tensor& self, const Tensor& mat2) {
  static const OpDef& op = get_op("bmm");
  return call_op1(op, {self, mat2}, {});
}
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
             const Scalar& alpha) {
  static const OpDef& op = get_op("addmm");
  return call_op1(op, {self, mat1, mat2}, {beta, alpha});
}
Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
               const Scalar& alpha) {
  static const OpDef& op = get_op("baddbmm");
  return call_op1(op, {self, batch1, batch2}, {beta, alpha});
}

Tensor Tensor::mm(const Tensor& other) const { return kiln::mm(*this, other); }
Tensor Tensor::bmm(const Tensor& other) const { return kiln::bmm(*this, other); }
Tensor Tensor::addmm(const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                     const Scalar& alpha) const {
  return kiln::addmm(*this, mat1, mat2, beta, alpha);
}
Tensor Tensor::baddbmm(const Tensor& b1, const Tensor& b2, const Scalar& beta,
                       const Scalar& alpha) const {
  return kiln::baddbmm(*this, b1, b2, beta, alpha);
}

}  // namespace kiln
