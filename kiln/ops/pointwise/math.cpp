// Elementary functions: exponentials and logarithms, roots, trigonometric and hyperbolic
// functions, the error function and its inverse, rounding.
#include <numbers>

#include "kiln/backend/scalar.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/pointwise/util.h"

namespace kiln {
namespace {
namespace Dtypes = pointwise::Dtypes;
using pointwise::grads;
using pointwise::reference;
using pointwise::unary_float_op;
using std::numbers::ln10;
using std::numbers::ln2;
using std::numbers::pi;

// floor, ceil, trunc: integers pass through; the derivative is zero almost everywhere.
template <class F>
OpDef& rounding_op(const char* name, const char* functor, double (*ref)(double)) {
  return register_op(name)
      .schema(std::string(name) + "(Tensor self) -> Tensor")
      .meta(meta::unary)
      .cpu([name](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
        if (!is_floating_point(out[0].dtype())) return cpu::copy(out[0], in[0]);
        pointwise::run<1, Dtypes::Floating>(name, out[0].dtype(), in, out[0], F{});
      })
      .save_inputs({})  // the backward reads no input
      .backward([](const BackwardContext& c) { return grads(zeros_like(c.grad())); })
      .samples([](ScalarType dt) { return samples::unary(dt); })
      .reference(reference(ref))
      .dtypes(pointwise::kNumeric)
      .lowering(lowering::Lowering::of(functor, [functor](const lowering::Call& c) {
        if (!is_floating_point(c.output)) return lowering::input(0, c.output);
        return pointwise::apply_expr<Dtypes::Floating>(functor, {}, 1, c.output);
      }));
}

// Round half to even, written out (independent of the kernel's nearbyint).
double round_half_even(double x) {
  const double r = std::floor(x), frac = x - r;
  if (frac != 0.5) return frac < 0.5 ? r : r + 1;
  return std::fmod(r, 2) == 0 ? r : r + 1;
}

std::vector<OpSample> round_samples(ScalarType dt) {
  auto s = pointwise::with_attrs(samples::unary(dt), {int64_t{0}});
  if (!is_floating_point(dt)) return s;
  Tensor halves = tensor({-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.25}, kFloat64).to(dt);
  s.push_back({{halves}, {int64_t{0}}, "halves to even", /*check_grad=*/false});
  s.push_back({{samples::make({3, 4}, dt)}, {int64_t{2}}, "decimals=2"});
  s.push_back({{samples::make({3, 4}, dt, -300, 300)}, {int64_t{-1}}, "decimals=-1"});
  return s;
}

}  // namespace

KILN_POINTWISE_ENTRY unary_float_op<scalar::Exp, Dtypes::HotFloating>("exp", "Exp", -3, 3)
    .save_outputs()
    .backward([](const BackwardContext& c) { return grads(c.grad() * c.output()); })
    .reference(reference([](double x) { return std::exp(x); }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Exp2>("exp2", "Exp2", -3, 3)
    .save_outputs()
    .backward([](const BackwardContext& c) { return grads(c.grad() * c.output() * ln2); })
    .reference(reference([](double x) { return std::pow(2.0, x); }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Expm1>("expm1", "Expm1", -3, 3)
    .save_outputs()
    .backward([](const BackwardContext& c) { return grads(c.grad() * (c.output() + 1)); })
    .reference(reference([](double x) { return std::expm1(x); }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Log, Dtypes::HotFloating>("log", "Log", 0.5, 3)
    .backward([](const BackwardContext& c) { return grads(c.grad() / c.input(0)); })
    .reference(reference([](double x) { return std::log(x); }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Log2>("log2", "Log2", 0.5, 3)
    .backward([](const BackwardContext& c) { return grads(c.grad() / (c.input(0) * ln2)); })
    .reference(reference([](double x) { return std::log(x) / ln2; }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Log10>("log10", "Log10", 0.5, 3)
    .backward([](const BackwardContext& c) { return grads(c.grad() / (c.input(0) * ln10)); })
    .reference(reference([](double x) { return std::log(x) / ln10; }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Log1p>("log1p", "Log1p", -0.5, 3)
    .backward([](const BackwardContext& c) { return grads(c.grad() / (c.input(0) + 1)); })
    .reference(reference([](double x) { return std::log1p(x); }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Sqrt, Dtypes::HotFloating>("sqrt", "Sqrt", 0.5, 3)
    .save_outputs()
    .backward([](const BackwardContext& c) { return grads(c.grad() / (c.output() * 2)); })
    .reference(reference([](double x) { return std::sqrt(x); }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Rsqrt, Dtypes::HotFloating>("rsqrt", "Rsqrt", 0.5, 3)
    .save_outputs()
    .backward([](const BackwardContext& c) { return grads(c.grad() * c.output().pow(3) * -0.5); })
    .reference(reference([](double x) { return 1 / std::sqrt(x); }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Reciprocal>("reciprocal", "Reciprocal", -3, 3)
    .save_outputs()
    .backward([](const BackwardContext& c) { return grads(-c.grad() * c.output() * c.output()); })
    .samples([](ScalarType dt) { return pointwise::nonzero_input(samples::unary(dt), 0); })
    .reference(reference([](double x) { return 1 / x; }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Sin>("sin", "Sin", -3, 3)
    .backward([](const BackwardContext& c) { return grads(c.grad() * c.input(0).cos()); })
    .reference(reference([](double x) { return std::sin(x); }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Cos>("cos", "Cos", -3, 3)
    .backward([](const BackwardContext& c) { return grads(-c.grad() * c.input(0).sin()); })
    .reference(reference([](double x) { return std::cos(x); }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Tan>("tan", "Tan", -1.2, 1.2)
    .save_outputs()
    .backward([](const BackwardContext& c) {
      return grads(c.grad() * (c.output() * c.output() + 1));
    })
    .reference(reference([](double x) { return std::tan(x); }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Asin>("asin", "Asin", -0.9, 0.9)
    .backward([](const BackwardContext& c) {
      return grads(c.grad() * (1 - c.input(0).square()).rsqrt());
    })
    .reference(reference([](double x) { return std::asin(x); }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Acos>("acos", "Acos", -0.9, 0.9)
    .backward([](const BackwardContext& c) {
      return grads(-c.grad() * (1 - c.input(0).square()).rsqrt());
    })
    .reference(reference([](double x) { return std::acos(x); }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Atan>("atan", "Atan", -3, 3)
    .backward([](const BackwardContext& c) { return grads(c.grad() / (c.input(0).square() + 1)); })
    .reference(reference([](double x) { return std::atan(x); }));

KILN_REGISTER_OP(atan2)
    .schema("atan2(Tensor self, Tensor other) -> Tensor")
    .meta(meta::broadcast("atan2", meta::ResultKind::Float))
    .cpu(pointwise::kernel<scalar::Atan2, 2, Dtypes::Floating>("atan2"))
    .backward([](const BackwardContext& c) {
      const Tensor &y = c.input(0), &x = c.input(1);
      Tensor g = c.grad() / (x.square() + y.square());
      return grads(c.needs_grad(0) ? g * x : Tensor(), c.needs_grad(1) ? -g * y : Tensor());
    })
    .samples([](ScalarType dt) { return pointwise::binary_samples(dt); })
    .reference(reference([](double y, double x) { return std::atan2(y, x); }))
    .dtypes(pointwise::kFloatingAndInt)
    .error_samples(pointwise::errors(2, ScalarType::Undefined))
    .lowering(pointwise::lower<scalar::Atan2, 2, Dtypes::Floating>("Atan2"));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Sinh>("sinh", "Sinh", -3, 3)
    .backward([](const BackwardContext& c) { return grads(c.grad() * c.input(0).cosh()); })
    .reference(reference([](double x) { return std::sinh(x); }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Cosh>("cosh", "Cosh", -3, 3)
    .backward([](const BackwardContext& c) { return grads(c.grad() * c.input(0).sinh()); })
    .reference(reference([](double x) { return std::cosh(x); }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Tanh, Dtypes::HotFloating>("tanh", "Tanh", -3, 3)
    .save_outputs()
    .backward([](const BackwardContext& c) {
      return grads(c.grad() * (1 - c.output() * c.output()));
    })
    .reference(reference([](double x) { return std::tanh(x); }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Erf>("erf", "Erf", -3, 3)
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      return grads(c.grad() * (-x.square()).exp() * (2 / std::sqrt(pi)));
    })
    .reference(reference([](double x) { return std::erf(x); }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Erfc>("erfc", "Erfc", -3, 3)
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      return grads(c.grad() * (-x.square()).exp() * (-2 / std::sqrt(pi)));
    })
    .reference(reference([](double x) { return std::erfc(x); }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Erfinv>("erfinv", "Erfinv", -0.95, 0.95)
    .save_outputs()
    .backward([](const BackwardContext& c) {
      return grads(c.grad() * c.output().square().exp() * (std::sqrt(pi) / 2));
    })
    .reference(reference([](double y) -> double {
      if (y <= -1 || y >= 1) return y == 1 ? INFINITY : y == -1 ? -INFINITY : NAN;
      double lo = -10, hi = 10;  // erf is increasing: bisect erf(x) = y
      for (int i = 0; i < 200 && lo < hi; ++i) {
        const double mid = (lo + hi) / 2;
        if (mid == lo || mid == hi) break;
        (std::erf(mid) < y ? lo : hi) = mid;
      }
      return (lo + hi) / 2;
    }));

KILN_POINTWISE_ENTRY rounding_op<scalar::Floor>("floor", "Floor",
                                                [](double x) { return std::floor(x); });
KILN_POINTWISE_ENTRY rounding_op<scalar::Ceil>("ceil", "Ceil",
                                               [](double x) { return std::ceil(x); });
KILN_POINTWISE_ENTRY rounding_op<scalar::Trunc>("trunc", "Trunc",
                                                [](double x) { return std::trunc(x); });

KILN_REGISTER_OP(round)
    .schema("round(Tensor self, int decimals=0) -> Tensor")
    .meta(meta::unary)
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const int64_t decimals = a.i(0);
      const ScalarType dt = out[0].dtype();
      if (!is_floating_point(dt)) {
        KILN_CHECK(decimals == 0, "round: decimals is only supported for floating dtypes, not ", dt,
                   " (got decimals=", decimals, ")");
        return cpu::copy(out[0], in[0]);
      }
      if (decimals == 0) {
        pointwise::run<1, Dtypes::Floating>("round", dt, in, out[0], scalar::Round{});
      } else {
        pointwise::run<1, Dtypes::Floating>("round", dt, in, out[0],
                                            scalar::RoundDecimals(decimals));
      }
    })
    .save_inputs({})  // the backward reads no input
    .backward([](const BackwardContext& c) { return grads(zeros_like(c.grad())); })
    .samples(round_samples)
    .reference(pointwise::reference_fn([](const double* v, const Attrs& a) {
      const int64_t d = a.i(0);
      const double scale = std::pow(10.0, static_cast<double>(d < 0 ? -d : d));
      return d < 0 ? round_half_even(v[0] / scale) * scale : round_half_even(v[0] * scale) / scale;
    }))
    .dtypes(pointwise::kNumeric)
    .error_samples([] {
      return std::vector<OpErrorSample>{{{tensor({1, 2}, kInt64)},
                                         {int64_t{2}},
                                         "decimals is only supported for floating dtypes, not "
                                         "int64 (got decimals=2)",
                                         "integers with decimals",
                                         /*in_meta=*/false}};
    })
    .lowering(lowering::Lowering::of("Round", [](const lowering::Call& c) -> lowering::ExprPtr {
      if (c.attrs.i(0) != 0) return nullptr;  // RoundDecimals holds more than doubles
      if (!is_floating_point(c.output)) return lowering::input(0, c.output);
      return pointwise::apply_expr<Dtypes::Floating>("Round", {}, 1, c.output);
    }));

KILN_REGISTER_OP(frac)
    .schema("frac(Tensor self) -> Tensor")
    .meta(meta::unary)
    .cpu(pointwise::kernel<scalar::Frac, 1, Dtypes::Floating>("frac"))
    .save_inputs({})  // the backward reads no input
    .backward([](const BackwardContext& c) { return grads(c.grad()); })
    .samples([](ScalarType dt) { return samples::unary(dt); })
    .reference(reference([](double x) { return x - std::trunc(x); }))
    .dtypes(pointwise::kFloating)
    .error_samples(pointwise::errors(1, kInt64))
    .lowering(pointwise::lower<scalar::Frac, 1, Dtypes::Floating>("Frac"));

namespace {
[[maybe_unused]] const bool kInplaceRegistered = pointwise::register_inplace(
    {"exp", "exp2", "expm1",  "log",   "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal",
     "sin", "cos",  "tan",    "asin",  "acos", "atan",  "atan2", "sinh", "cosh",  "tanh",
     "erf", "erfc", "erfinv", "floor", "ceil", "trunc", "round", "frac"});
}  // namespace

}  // namespace kiln
