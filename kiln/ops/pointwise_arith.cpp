// add, sub, mul, neg, exp: arithmetic registry entries.
#include "kiln/backend/scalar.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/pointwise_util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {
using pointwise::Dtypes;
const std::vector<ScalarType> kNumericDtypes = {kFloat64, kFloat32, kBFloat16, kFloat16, kInt64, kInt32, kUInt8};
const std::vector<ScalarType> kFloatDtypes = {kFloat64, kFloat32, kBFloat16, kFloat16};

// a + alpha * b in the output dtype.
KernelFn add_kernel(double sign) {
  return [sign](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& attrs) {
    const ScalarType dt = out[0].dtype();
    Scalar alpha = attrs.scalar(0);
    pointwise::visit(Dtypes::All, dt, "add", [&](auto tag) {
      using T = decltype(tag);
      using C = cpu::compute_t<T>;
      Tensor a = pointwise::as_dtype(in[0], dt), b = pointwise::as_dtype(in[1], dt);
      if constexpr (std::is_same_v<T, bool>) {
        cpu::pointwise<T, T, T>(out[0], [](bool x, bool y) { return x || y; }, {&a, &b});
      } else {
        const C al = static_cast<C>(sign * alpha.to_double());
        if (al == C(1)) {
          cpu::pointwise<T, T, T>(out[0], scalar::Add{}, {&a, &b});
        } else {
          cpu::pointwise<T, T, T>(out[0], [al](C x, C y) { return static_cast<C>(x + al * y); },
                                  {&a, &b});
        }
      }
    });
  };
}

MetaFn add_meta(const char* name) {
  MetaFn base = meta::broadcast(name, meta::ResultKind::Promote);
  return [name, base](const std::vector<Tensor>& in, const Attrs& a) {
    auto specs = base(in, a);
    KILN_CHECK(!(specs[0].dtype == kBool && a.scalar(0).to_double() != 1 && std::string(name) == "sub"),
               name, ": subtraction with two bool tensors is not supported; use logical_xor");
    return specs;
  };
}

std::vector<OpSample> add_samples(ScalarType dt) {
  auto s = samples::binary(dt);
  for (auto& x : s) x.attrs = {Scalar(1)};
  s.push_back({{samples::make({3, 4}, dt), samples::make({4}, dt)}, {Scalar(2)}, "alpha=2"});
  return s;
}
}  // namespace

KILN_REGISTER_OP(add)
    .schema("add(Tensor self, Tensor other, Scalar alpha=1) -> Tensor")
    .meta(add_meta("add"))
    .cpu(add_kernel(1))
    .backward([](const BackwardContext& c) {
      double alpha = c.attrs.scalar(0).to_double();
      return std::vector<Tensor>{c.grad(), alpha == 1 ? c.grad() : c.grad() * alpha};
    })
    .samples(add_samples)
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      double alpha = a.scalar(0).to_double();
      return std::vector<Tensor>{in[0].to(kFloat64) + in[1].to(kFloat64) * alpha};
    })
    .dtypes(kNumericDtypes)
    .lowering("pointwise:kiln::scalar::Add");

KILN_REGISTER_OP(sub)
    .schema("sub(Tensor self, Tensor other, Scalar alpha=1) -> Tensor")
    .meta(add_meta("sub"))
    .cpu(add_kernel(-1))
    .backward([](const BackwardContext& c) {
      double alpha = c.attrs.scalar(0).to_double();
      return std::vector<Tensor>{c.grad(), c.grad() * -alpha};
    })
    .samples(add_samples)
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      double alpha = a.scalar(0).to_double();
      return std::vector<Tensor>{in[0].to(kFloat64) - in[1].to(kFloat64) * alpha};
    })
    .dtypes(kNumericDtypes)
    .lowering("pointwise:kiln::scalar::Sub");

KILN_REGISTER_OP(mul)
    .schema("mul(Tensor self, Tensor other) -> Tensor")
    .meta(meta::broadcast("mul", meta::ResultKind::Promote))
    .cpu(pointwise::kernel<scalar::Mul, 2>("mul", Dtypes::All))
    .backward([](const BackwardContext& c) {
      return std::vector<Tensor>{c.needs_grad(0) ? c.grad() * c.input(1) : Tensor(),
                                 c.needs_grad(1) ? c.grad() * c.input(0) : Tensor()};
    })
    .samples([](ScalarType dt) { return samples::binary(dt); })
    .reference(pointwise::reference([](double a, double b) { return a * b; }))
    .dtypes(kNumericDtypes)
    .lowering("pointwise:kiln::scalar::Mul");

KILN_REGISTER_OP(neg)
    .schema("neg(Tensor self) -> Tensor")
    .meta(meta::unary)
    .cpu(pointwise::kernel<scalar::Neg, 1>("neg", Dtypes::Numeric))
    .backward([](const BackwardContext& c) { return std::vector<Tensor>{-c.grad()}; })
    .samples([](ScalarType dt) { return samples::unary(dt); })
    .reference(pointwise::reference([](double a) { return -a; }))
    .dtypes(kNumericDtypes)
    .lowering("pointwise:kiln::scalar::Neg");

KILN_REGISTER_OP(exp)
    .schema("exp(Tensor self) -> Tensor")
    .meta(meta::unary_float)
    .cpu(pointwise::kernel<scalar::Exp, 1>("exp", Dtypes::Floating))
    .save_outputs()
    .backward([](const BackwardContext& c) { return std::vector<Tensor>{c.grad() * c.output()}; })
    .samples([](ScalarType dt) { return samples::unary(dt); })
    .reference(pointwise::reference([](double a) { return std::exp(a); }))
    .dtypes(kFloatDtypes)
    .lowering("pointwise:kiln::scalar::Exp");

namespace {
const OpDef& op_add() { static const OpDef& op = get_op("add"); return op; }
const OpDef& op_sub() { static const OpDef& op = get_op("sub"); return op; }
const OpDef& op_mul() { static const OpDef& op = get_op("mul"); return op; }
}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) { return pointwise::call(op_add(), {a, b}, {alpha}); }
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) { return add(a, wrapped_scalar(b), alpha); }
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) { return pointwise::call(op_sub(), {a, b}, {alpha}); }
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) { return sub(a, wrapped_scalar(b), alpha); }
Tensor rsub(const Tensor& a, const Scalar& b) { return sub(wrapped_scalar(b), a); }
Tensor mul(const Tensor& a, const Tensor& b) { return pointwise::call(op_mul(), {a, b}); }
Tensor mul(const Tensor& a, const Scalar& b) { return mul(a, wrapped_scalar(b)); }
Tensor neg(const Tensor& a) { static const OpDef& op = get_op("neg"); return pointwise::call(op, {a}); }
Tensor exp(const Tensor& a) { static const OpDef& op = get_op("exp"); return pointwise::call(op, {a}); }

Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const { return kiln::add(*this, o, alpha); }
Tensor Tensor::add(const Scalar& o, const Scalar& alpha) const { return kiln::add(*this, o, alpha); }
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return kiln::sub(*this, o, alpha); }
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const { return kiln::sub(*this, o, alpha); }
Tensor Tensor::mul(const Tensor& o) const { return kiln::mul(*this, o); }
Tensor Tensor::mul(const Scalar& o) const { return kiln::mul(*this, o); }
Tensor Tensor::neg() const { return kiln::neg(*this); }
Tensor Tensor::exp() const { return kiln::exp(*this); }
Tensor operator+(const Scalar& a, const Tensor& b) { return kiln::add(b, a); }
Tensor operator-(const Scalar& a, const Tensor& b) { return kiln::rsub(b, a); }
Tensor operator*(const Scalar& a, const Tensor& b) { return kiln::mul(b, a); }

}  // namespace kiln
