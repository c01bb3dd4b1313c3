// Arithmetic: add, sub, mul, div (true, trunc, floor), neg, abs, sign, square, pow, fmod,
// remainder, maximum, minimum.
#include "kiln/backend/scalar.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/pointwise/util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {
using pointwise::binary_samples;
namespace Dtypes = pointwise::Dtypes;
using pointwise::grads;

// a + alpha * b in the output dtype.
KernelFn add_kernel(double sign) {
  return [sign](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& attrs) {
    const ScalarType dt = out[0].dtype();
    const double alpha = sign * attrs.scalar(0).to_double();
    if (dt == kBool || alpha == 1) {
      pointwise::run<2, Dtypes::All | Dtypes::Native16>("add", dt, in, out[0], scalar::Add{});
    } else {
      pointwise::run<2, Dtypes::Numeric | Dtypes::Native16>(
          "add", dt, in, out[0], [alpha](auto x, auto y) {
            using C = decltype(x);
            return static_cast<C>(x + static_cast<C>(alpha) * y);
          });
    }
  };
}

// The lowering of add_kernel(sign).
lowering::Lowering add_lowering(double sign) {
  return lowering::Lowering::of("Add", [sign](const lowering::Call& c) -> lowering::ExprPtr {
    const double alpha = sign * c.attrs.scalar(0).to_double();
    if (c.output == kBool || alpha == 1)
      return pointwise::apply_expr<Dtypes::All | Dtypes::Native16>("Add", {}, 2, c.output);
    auto sum = pointwise::apply_expr<Dtypes::Numeric | Dtypes::Native16>("Add", {}, 2, c.output);
    if (!sum) return nullptr;
    const ScalarType ct = sum->dtype;
    auto scaled = lowering::call("Mul", {}, {lowering::constant(alpha, ct), sum->args[1]}, ct);
    return lowering::call("Add", {}, {sum->args[0], scaled}, ct);
  });
}

// The lowering of a kernel that computes F for floating outputs and checks integer divisors
// first (the check reads values: integer calls stay extern calls).
template <unsigned W>
lowering::Lowering floating_lowering(const char* functor) {
  return lowering::Lowering::of(functor, [functor](const lowering::Call& c) -> lowering::ExprPtr {
    if (!is_floating_point(c.output)) return nullptr;
    return pointwise::apply_expr<W>(functor, {}, 2, c.output);
  });
}

MetaFn add_meta(const char* name) {
  MetaFn base = meta::broadcast(name, meta::ResultKind::Promote);
  const bool is_sub = std::string(name) == "sub";
  return [name, base, is_sub](const std::vector<Tensor>& in, const Attrs& a) {
    auto specs = base(in, a);
    KILN_CHECK(!(is_sub && specs[0].dtype == kBool), name,
               ": Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
               "`^` or `logical_xor()` operator instead.");
    return specs;
  };
}

std::vector<OpSample> add_samples(ScalarType dt) {
  auto s = pointwise::with_attrs(binary_samples(dt), {Scalar(1)});
  s.push_back({{samples::make({3, 4}, dt), samples::make({4}, dt)}, {Scalar(2)}, "alpha=2"});
  return s;
}

// div's attribute: the rounding mode (None, "trunc" or "floor").
std::optional<std::string> rounding_mode(const Attrs& a) {
  if (a.is_none(0)) return std::nullopt;
  const std::string& m = a.str(0);
  KILN_CHECK(m == "trunc" || m == "floor",
             "div: expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", m,
             "'");
  return m;
}

std::vector<OpSample> div_samples(ScalarType dt) {
  auto s =
      pointwise::with_attrs(pointwise::nonzero_input(binary_samples(dt), 1), {std::monostate{}});
  for (const char* mode : {"trunc", "floor"}) {
    for (auto& r : pointwise::nonzero_input(binary_samples(dt), 1)) {
      r.attrs = {std::string(mode)};
      r.desc += std::string(" ") + mode;
      r.check_grad = false;  // piecewise constant
      s.push_back(std::move(r));
    }
  }
  return s;
}

std::vector<OpSample> pow_samples(ScalarType dt) {
  const bool fp = is_floating_point(dt);
  // Floating: positive bases (a negative base to a fractional power is NaN); integers: small
  // non-negative exponents.
  auto s = fp ? binary_samples(dt, 0.5, 2.5, -2, 2) : binary_samples(dt, -3, 3, 0, 4);
  s.push_back({{samples::make({3, 4}, dt, 0.5, 2.5), wrapped_scalar(2)}, {}, "tensor ** 2"});
  s.push_back({{samples::make({5}, dt, 0.5, 2.5), wrapped_scalar(0.5)}, {}, "tensor ** 0.5"});
  s.push_back({{wrapped_scalar(fp ? Scalar(1.5) : Scalar(2)), samples::make({4}, dt, -2, 3)},
               {},
               "number ** tensor"});
  return s;
}

// maximum/minimum backward: the gradient goes to the selected input, split evenly on ties.
Tensor select_grad(const Tensor& grad, const Tensor& self, const Tensor& other, bool is_max,
                   bool for_self) {
  Tensor split = where(self == other, grad / 2, grad);
  Tensor lost = (is_max == for_self) ? (self < other) : (self > other);
  return split.masked_fill(lost, 0);
}

}  // namespace

KILN_REGISTER_OP(add)
    .schema("add(Tensor self, Tensor other, Scalar alpha=1) -> Tensor")
    .meta(add_meta("add"))
    .cpu(add_kernel(1))
    .save_inputs({})  // the backward reads no input
    .backward([](const BackwardContext& c) {
      double alpha = c.attrs.scalar(0).to_double();
      return grads(c.grad(), alpha == 1 ? c.grad() : c.grad() * alpha);
    })
    .samples(add_samples)
    .reference(pointwise::reference_fn([](const double* v, const Attrs& a) {
      return v[0] + a.scalar(0).to_double() * v[1];
    }))
    .dtypes(pointwise::kAll)
    .error_samples(pointwise::errors(2, ScalarType::Undefined, {Scalar(1)}))
    .lowering(add_lowering(1));

KILN_REGISTER_OP(sub)
    .schema("sub(Tensor self, Tensor other, Scalar alpha=1) -> Tensor")
    .meta(add_meta("sub"))
    .cpu(add_kernel(-1))
    .save_inputs({})  // the backward reads no input
    .backward([](const BackwardContext& c) {
      return grads(c.grad(), c.grad() * -c.attrs.scalar(0).to_double());
    })
    .samples(add_samples)
    .reference(pointwise::reference_fn([](const double* v, const Attrs& a) {
      return v[0] - a.scalar(0).to_double() * v[1];
    }))
    .dtypes(pointwise::kNumeric)
    .error_samples([] {
      auto s = pointwise::errors(2, ScalarType::Undefined, {Scalar(1)})();
      s.push_back({{ones({2}, kBool), ones({2}, kBool)},
                   {Scalar(1)},
                   "Subtraction, the `-` operator, with two bool tensors is not supported",
                   "bool operands"});
      return s;
    })
    .lowering(add_lowering(-1));

KILN_REGISTER_OP(mul)
    .schema("mul(Tensor self, Tensor other) -> Tensor")
    .meta(meta::broadcast("mul", meta::ResultKind::Promote))
    .cpu(pointwise::kernel<scalar::Mul, 2, Dtypes::All | Dtypes::Native16>("mul"))
    .backward([](const BackwardContext& c) {
      return grads(c.needs_grad(0) ? c.grad() * c.input(1) : Tensor(),
                   c.needs_grad(1) ? c.grad() * c.input(0) : Tensor());
    })
    .samples([](ScalarType dt) { return binary_samples(dt); })
    .reference(pointwise::reference([](double a, double b) { return a * b; }))
    .dtypes(pointwise::kAll)
    .error_samples(pointwise::errors(2, ScalarType::Undefined))
    .lowering(pointwise::lower<scalar::Mul, 2, Dtypes::All | Dtypes::Native16>("Mul"));

KILN_REGISTER_OP(div)
    .schema("div(Tensor self, Tensor other, str? rounding_mode=None) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      auto kind = rounding_mode(a) ? meta::ResultKind::Promote : meta::ResultKind::Float;
      return meta::broadcast("div", kind)(in, a);
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const ScalarType dt = out[0].dtype();
      auto mode = rounding_mode(a);
      if (!mode)
        return pointwise::run<2, Dtypes::Floating | Dtypes::Native16>("div", dt, in, out[0],
                                                                      scalar::Div{});
      if (!is_floating_point(dt)) pointwise::check_nonzero_divisor("div", in[1]);
      if (*mode == "trunc") {
        pointwise::run<2, Dtypes::Numeric>("div", dt, in, out[0], scalar::DivTrunc{});
      } else {
        pointwise::run<2, Dtypes::Numeric>("div", dt, in, out[0], scalar::DivFloor{});
      }
    })
    .backward([](const BackwardContext& c) {
      if (rounding_mode(c.attrs)) return grads(zeros_like(c.grad()), zeros_like(c.grad()));
      const Tensor& b = c.input(1);
      return grads(c.needs_grad(0) ? c.grad() / b : Tensor(),
                   c.needs_grad(1) ? -c.grad() * c.input(0) / (b * b) : Tensor());
    })
    .samples(div_samples)
    .reference(pointwise::reference_fn([](const double* v, const Attrs& a) {
      const double q = v[0] / v[1];
      if (a.is_none(0)) return q;
      return a.str(0) == "trunc" ? std::trunc(q) : std::floor(q);
    }))
    .dtypes(pointwise::kNumeric)
    .error_samples([] {
      auto s = pointwise::errors(2, ScalarType::Undefined, {std::monostate{}})();
      const Tensor x = samples::make({3}, kFloat32);
      s.push_back(
          {{x, x},
           {std::string("round")},
           "expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'",
           "rounding mode"});
      s.push_back(pointwise::dtype_error(2, kBool, {std::string("trunc")}));
      s.push_back({{tensor({4, 2}, kInt64), tensor({2, 0}, kInt64)},
                   {std::string("floor")},
                   "ZeroDivisionError",
                   "integer division by zero",
                   /*in_meta=*/false});
      return s;
    })
    .lowering(lowering::Lowering::of("Div", [](const lowering::Call& c) -> lowering::ExprPtr {
      auto mode = rounding_mode(c.attrs);
      if (!mode)
        return pointwise::apply_expr<Dtypes::Floating | Dtypes::Native16>("Div", {}, 2, c.output);
      if (!is_floating_point(c.output)) return nullptr;  // the kernel checks for zero divisors
      return pointwise::apply_expr<Dtypes::Numeric>(*mode == "trunc" ? "DivTrunc" : "DivFloor", {},
                                                    2, c.output);
    }));

KILN_REGISTER_OP(neg)
    .schema("neg(Tensor self) -> Tensor")
    .meta(meta::unary)
    .cpu(pointwise::kernel<scalar::Neg, 1, Dtypes::Numeric | Dtypes::Native16>("neg"))
    .save_inputs({})  // the backward reads no input
    .backward([](const BackwardContext& c) { return grads(-c.grad()); })
    .samples([](ScalarType dt) { return samples::unary(dt); })
    .reference(pointwise::reference([](double a) { return -a; }))
    .dtypes(pointwise::kNumeric)
    .error_samples(pointwise::errors(1, kBool))
    .lowering(pointwise::lower<scalar::Neg, 1, Dtypes::Numeric | Dtypes::Native16>("Neg"));

KILN_REGISTER_OP(abs)
    .schema("abs(Tensor self) -> Tensor")
    .meta(meta::unary)
    .cpu(pointwise::kernel<scalar::Abs, 1, Dtypes::Numeric>("abs"))
    .backward([](const BackwardContext& c) { return grads(c.grad() * c.input(0).sign()); })
    .samples([](ScalarType dt) { return samples::unary(dt); })
    .reference(pointwise::reference([](double a) { return std::fabs(a); }))
    .dtypes(pointwise::kNumeric)
    .error_samples(pointwise::errors(1, kBool))
    .lowering(pointwise::lower<scalar::Abs, 1, Dtypes::Numeric>("Abs"));

KILN_REGISTER_OP(sign)
    .schema("sign(Tensor self) -> Tensor")
    .meta(meta::unary)
    .cpu(pointwise::kernel<scalar::Sign, 1, Dtypes::All>("sign"))
    .save_inputs({})  // the backward reads no input
    .backward([](const BackwardContext& c) { return grads(zeros_like(c.grad())); })
    .samples([](ScalarType dt) { return samples::unary(dt); })
    .reference(pointwise::reference([](double a) { return a > 0   ? 1.0
                                                          : a < 0 ? -1.0
                                                                  : 0.0; }))
    .dtypes(pointwise::kAll)
    .lowering(pointwise::lower<scalar::Sign, 1, Dtypes::All>("Sign"));

KILN_REGISTER_OP(square)
    .schema("square(Tensor self) -> Tensor")
    .meta(meta::unary)
    .cpu(pointwise::kernel<scalar::Square, 1, Dtypes::Numeric>("square"))
    .backward([](const BackwardContext& c) { return grads(c.grad() * c.input(0) * 2); })
    .samples([](ScalarType dt) { return samples::unary(dt); })
    .reference(pointwise::reference([](double a) { return a * a; }))
    .dtypes(pointwise::kNumeric)
    .error_samples(pointwise::errors(1, kBool))
    .lowering(pointwise::lower<scalar::Square, 1, Dtypes::Numeric>("Square"));

KILN_REGISTER_OP(pow)
    .schema("pow(Tensor self, Tensor exponent) -> Tensor")
    .meta(meta::broadcast("pow", meta::ResultKind::Promote))
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
      const ScalarType dt = out[0].dtype();
      const Tensor& e = in[1];
      KILN_CHECK(!(is_integral(dt, true) && e.impl()->is_wrapped_number() &&
                   !e.is_floating_point() && e.item<int64_t>() < 0),
                 "pow: Integers to negative integer powers are not allowed.");
      // x ** 2 as x * x, as PyTorch computes it: std::pow per element took 30x as long.
      if (is_floating_point(dt) && e.numel() == 1 && e.item<double>() == 2.0)
        return pointwise::run<1, Dtypes::Numeric>("pow", dt, {in[0]}, out[0], scalar::Square{});
      pointwise::run<2, Dtypes::Numeric>("pow", dt, in, out[0], scalar::Pow{});
    })
    .save_outputs(/*inputs_too=*/true)
    .backward([](const BackwardContext& c) {
      const Tensor &x = c.input(0), &e = c.input(1);
      Tensor gx, ge;
      if (c.needs_grad(0)) gx = (c.grad() * e * x.pow(e - 1)).masked_fill(e == 0, 0);
      if (c.needs_grad(1)) {
        // d/de x^e = x^e log x, taken as 0 where x == 0 and e >= 0 (the limit).
        ge = where(logical_and(x == 0, e >= 0), zeros_like(c.grad()),
                   c.grad() * c.output() * x.log());
      }
      return grads(gx, ge);
    })
    .samples(pow_samples)
    .reference(pointwise::reference([](double a, double b) { return std::pow(a, b); }))
    .dtypes(pointwise::kNumeric)
    .error_samples([] {
      auto s = pointwise::errors(2, kBool)();
      s.push_back({{tensor({2, 3}, kInt64), wrapped_scalar(-2)},
                   {},
                   "Integers to negative integer powers are not allowed",
                   "integer to a negative power",
                   /*in_meta=*/false});
      return s;
    })
    .lowering(floating_lowering<Dtypes::Numeric>("Pow"));

namespace {
// fmod and remainder: bool operands, and an integer divisor of 0 (found by the kernel).
std::vector<OpErrorSample> integer_division_errors() {
  auto s = pointwise::errors(2, kBool)();
  s.push_back({{tensor({4, 2}, kInt64), tensor({2, 0}, kInt64)},
               {},
               "ZeroDivisionError",
               "integer division by zero",
               /*in_meta=*/false});
  return s;
}
}  // namespace

KILN_REGISTER_OP(fmod)
    .schema("fmod(Tensor self, Tensor other) -> Tensor")
    .meta(meta::broadcast("fmod", meta::ResultKind::Promote))
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
      const ScalarType dt = out[0].dtype();
      if (!is_floating_point(dt)) pointwise::check_nonzero_divisor("fmod", in[1]);
      pointwise::run<2, Dtypes::Numeric>("fmod", dt, in, out[0], scalar::Fmod{});
    })
    .backward([](const BackwardContext& c) {
      return grads(c.grad(), c.needs_grad(1)
                                 ? -c.grad() * div(c.input(0), c.input(1), std::string("trunc"))
                                 : Tensor());
    })
    .samples([](ScalarType dt) { return pointwise::nonzero_input(binary_samples(dt), 1); })
    .reference(pointwise::reference([](double a, double b) { return std::fmod(a, b); }))
    .dtypes(pointwise::kNumeric)
    .error_samples(integer_division_errors)
    .lowering(floating_lowering<Dtypes::Numeric>("Fmod"));

KILN_REGISTER_OP(remainder)
    .schema("remainder(Tensor self, Tensor other) -> Tensor")
    .meta(meta::broadcast("remainder", meta::ResultKind::Promote))
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
      const ScalarType dt = out[0].dtype();
      if (!is_floating_point(dt)) pointwise::check_nonzero_divisor("remainder", in[1]);
      pointwise::run<2, Dtypes::Numeric>("remainder", dt, in, out[0], scalar::Remainder{});
    })
    .backward([](const BackwardContext& c) {
      return grads(c.grad(), c.needs_grad(1)
                                 ? -c.grad() * div(c.input(0), c.input(1), std::string("floor"))
                                 : Tensor());
    })
    .samples([](ScalarType dt) { return pointwise::nonzero_input(binary_samples(dt), 1); })
    .reference(pointwise::reference([](double a, double b) { return a - b * std::floor(a / b); }))
    .dtypes(pointwise::kNumeric)
    .error_samples(integer_division_errors)
    .lowering(floating_lowering<Dtypes::Numeric>("Remainder"));

KILN_REGISTER_OP(maximum)
    .schema("maximum(Tensor self, Tensor other) -> Tensor")
    .meta(meta::broadcast("maximum", meta::ResultKind::Promote))
    .cpu(pointwise::kernel<scalar::Maximum, 2, Dtypes::All>("maximum"))
    .backward([](const BackwardContext& c) {
      const Tensor &a = c.input(0), &b = c.input(1);
      return grads(c.needs_grad(0) ? select_grad(c.grad(), a, b, true, true) : Tensor(),
                   c.needs_grad(1) ? select_grad(c.grad(), a, b, true, false) : Tensor());
    })
    .samples([](ScalarType dt) { return binary_samples(dt); })
    .reference(pointwise::reference([](double a, double b) { return a > b ? a : b; }))
    .dtypes(pointwise::kAll)
    .error_samples(pointwise::errors(2, ScalarType::Undefined))
    .lowering(pointwise::lower<scalar::Maximum, 2, Dtypes::All>("Maximum"));

KILN_REGISTER_OP(minimum)
    .schema("minimum(Tensor self, Tensor other) -> Tensor")
    .meta(meta::broadcast("minimum", meta::ResultKind::Promote))
    .cpu(pointwise::kernel<scalar::Minimum, 2, Dtypes::All>("minimum"))
    .backward([](const BackwardContext& c) {
      const Tensor &a = c.input(0), &b = c.input(1);
      return grads(c.needs_grad(0) ? select_grad(c.grad(), a, b, false, true) : Tensor(),
                   c.needs_grad(1) ? select_grad(c.grad(), a, b, false, false) : Tensor());
    })
    .samples([](ScalarType dt) { return binary_samples(dt); })
    .reference(pointwise::reference([](double a, double b) { return a < b ? a : b; }))
    .dtypes(pointwise::kAll)
    .error_samples(pointwise::errors(2, ScalarType::Undefined))
    .lowering(pointwise::lower<scalar::Minimum, 2, Dtypes::All>("Minimum"));

namespace {
[[maybe_unused]] const bool kInplaceRegistered =
    pointwise::register_inplace({"add", "sub", "mul", "div", "neg", "abs", "sign", "square", "pow",
                                 "fmod", "remainder", "maximum", "minimum"});
}  // namespace

}  // namespace kiln
