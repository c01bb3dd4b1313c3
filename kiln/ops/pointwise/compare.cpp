// Predicates and bit-level ops: comparisons (eq ne lt le gt ge), logical and/or/xor/not,
// bitwise and/or/xor/not, isnan/isinf/isfinite, and nan_to_num.
#include <cfloat>
#include <limits>

#include "kiln/backend/scalar.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/pointwise/util.h"

namespace kiln {
namespace {
namespace Dtypes = pointwise::Dtypes;
using pointwise::grads;

// Comparisons need equal elements too: the "ties" sample shares half of its values.
std::vector<OpSample> comparison_samples(ScalarType dt) {
  auto s = pointwise::binary_samples(dt, -2, 2, -2, 2);
  Tensor a = samples::make({2, 6}, dt, -2, 2);
  Tensor b = a.clone();
  b.narrow(1, 0, 3).copy_(samples::make({2, 3}, dt, -2, 2));
  s.push_back({{a, b}, {}, "ties"});
  return s;
}

// Logical ops need zeros, which random floats never are.
std::vector<OpSample> logical_samples(ScalarType dt) {
  auto s = pointwise::binary_samples(dt);
  s.push_back(
      {{samples::make({3, 4}, kInt64, -1, 2).to(dt), samples::make({4}, kInt64, -1, 2).to(dt)},
       {},
       "with zeros"});
  return s;
}

Tensor special_values(ScalarType dt) {
  const double inf = std::numeric_limits<double>::infinity();
  return tensor(std::vector<double>{std::nan(""), inf, -inf, 0.0, 1.5, -2.25}, kFloat64).to(dt);
}

std::vector<OpSample> classify_samples(ScalarType dt) {
  auto s = samples::unary(dt);
  if (is_floating_point(dt)) s.push_back({{special_values(dt)}, {}, "nan and inf"});
  return s;
}

// The largest finite value of a floating dtype (nan_to_num's default for +inf).
double max_finite(ScalarType dt) {
  switch (dt) {
    case kFloat16:
      return 65504.0;
    case kBFloat16:
      return 0x1.fep127;  // (2 - 2^-7) * 2^127
    case kFloat32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

scalar::NanToNum nan_to_num_functor(const Attrs& a, ScalarType dt) {
  const double big = max_finite(dt);
  return {a.opt_f(0).value_or(0.0), a.opt_f(1).value_or(big), a.opt_f(2).value_or(-big)};
}

// Logical ops see truthiness only: inputs are converted to bool first.
template <class F, size_t N>
KernelFn logical_kernel(const char* op) {
  return [op](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
    pointwise::run<N, Dtypes::Boolean, bool>(op, kBool, in, out[0], F{});
  };
}

// isnan, isinf, isfinite: constant on integers and bool.
template <class F>
KernelFn classify_kernel(const char* op, bool on_integers) {
  return [op, on_integers](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
    if (!in[0].is_floating_point()) return cpu::fill(out[0], on_integers);
    pointwise::run<1, Dtypes::Floating, bool>(op, in[0].dtype(), in, out[0], F{});
  };
}

lowering::Lowering logical_lowering(const char* functor, size_t n) {
  return lowering::Lowering::of(functor, [functor, n](const lowering::Call&) {
    return pointwise::apply_expr<Dtypes::Boolean>(functor, {}, n, kBool);
  });
}

lowering::Lowering classify_lowering(const char* functor, bool on_integers) {
  return lowering::Lowering::of(functor, [=](const lowering::Call& c) {
    const ScalarType dt = c.inputs[0].dtype();
    if (!is_floating_point(dt)) return lowering::constant(on_integers, kBool);
    return pointwise::apply_expr<Dtypes::Floating>(functor, {}, 1, dt, kBool);
  });
}

}  // namespace

#define KILN_COMPARISON_OP(name, Functor, expr)                                               \
  KILN_REGISTER_OP(name)                                                                      \
      .schema(#name "(Tensor self, Tensor other) -> Tensor")                                  \
      .meta(meta::broadcast(#name, meta::ResultKind::Bool))                                   \
      .cpu(pointwise::predicate_kernel<scalar::Functor, 2, Dtypes::All>(#name))               \
      .samples(comparison_samples)                                                            \
      .reference(pointwise::reference([](double a, double b) { return (expr) ? 1.0 : 0.0; })) \
      .dtypes(pointwise::kAll)                                                                \
      .error_samples(pointwise::errors(2, ScalarType::Undefined))                             \
      .lowering(pointwise::lower_predicate<2, Dtypes::All>(#Functor));
KILN_COMPARISON_OP(eq, Eq, a == b)
KILN_COMPARISON_OP(ne, Ne, a != b)
KILN_COMPARISON_OP(lt, Lt, a < b)
KILN_COMPARISON_OP(le, Le, a <= b)
KILN_COMPARISON_OP(gt, Gt, a > b)
KILN_COMPARISON_OP(ge, Ge, a >= b)
#undef KILN_COMPARISON_OP

#define KILN_LOGICAL_OP(name, Functor, expr)                      \
  KILN_REGISTER_OP(name)                                          \
      .schema(#name "(Tensor self, Tensor other) -> Tensor")      \
      .meta(meta::broadcast(#name, meta::ResultKind::Bool))       \
      .cpu(logical_kernel<scalar::Functor, 2>(#name))             \
      .samples(logical_samples)                                   \
      .reference(pointwise::reference([](double x, double y) {    \
        const bool a = x != 0, b = y != 0;                        \
        return (expr) ? 1.0 : 0.0;                                \
      }))                                                         \
      .dtypes(pointwise::kAll)                                    \
      .error_samples(pointwise::errors(2, ScalarType::Undefined)) \
      .lowering(logical_lowering(#Functor, 2));
KILN_LOGICAL_OP(logical_and, LogicalAnd, a&& b)
KILN_LOGICAL_OP(logical_or, LogicalOr, a || b)
KILN_LOGICAL_OP(logical_xor, LogicalXor, a != b)
#undef KILN_LOGICAL_OP

KILN_REGISTER_OP(logical_not)
    .schema("logical_not(Tensor self) -> Tensor")
    .meta(meta::unary_bool)
    .cpu(logical_kernel<scalar::LogicalNot, 1>("logical_not"))
    .samples([](ScalarType dt) {
      auto s = samples::unary(dt);
      s.push_back({{samples::make({7}, kInt64, -1, 2).to(dt)}, {}, "with zeros"});
      return s;
    })
    .reference(pointwise::reference([](double x) { return x == 0 ? 1.0 : 0.0; }))
    .dtypes(pointwise::kAll)
    .lowering(logical_lowering("LogicalNot", 1));

// Bitwise references on the values as int64 (two's complement, like the narrower types).
#define KILN_BITWISE_OP(name, Functor, op)                                              \
  KILN_REGISTER_OP(name)                                                                \
      .schema(#name "(Tensor self, Tensor other) -> Tensor")                            \
      .meta(meta::broadcast(#name, meta::ResultKind::Promote))                          \
      .cpu(pointwise::kernel<scalar::Functor, 2, Dtypes::Integral>(#name))              \
      .samples([](ScalarType dt) { return pointwise::binary_samples(dt); })             \
      .reference(pointwise::reference([](double x, double y) {                          \
        return static_cast<double>(static_cast<int64_t>(x) op static_cast<int64_t>(y)); \
      }))                                                                               \
      .dtypes(pointwise::kIntegral)                                                     \
      .error_samples(pointwise::errors(2, kFloat32))                                    \
      .lowering(pointwise::lower<scalar::Functor, 2, Dtypes::Integral>(#Functor));
KILN_BITWISE_OP(bitwise_and, BitwiseAnd, &)
KILN_BITWISE_OP(bitwise_or, BitwiseOr, |)
KILN_BITWISE_OP(bitwise_xor, BitwiseXor, ^)
#undef KILN_BITWISE_OP

KILN_REGISTER_OP(bitwise_not)
    .schema("bitwise_not(Tensor self) -> Tensor")
    .meta(meta::unary)
    .cpu(pointwise::kernel<scalar::BitwiseNot, 1, Dtypes::Integral>("bitwise_not"))
    .samples([](ScalarType dt) { return samples::unary(dt); })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      if (in[0].dtype() == kBool)  // bool's bitwise not is logical not
        return pointwise::reference([](double x) { return x == 0 ? 1.0 : 0.0; })(in, a);
      return pointwise::reference(
          [](double x) { return static_cast<double>(~static_cast<int64_t>(x)); })(in, a);
    })
    .dtypes(pointwise::kIntegral)
    .error_samples(pointwise::errors(1, kFloat32))
    .lowering(pointwise::lower<scalar::BitwiseNot, 1, Dtypes::Integral>("BitwiseNot"));

#define KILN_CLASSIFY_OP(name, Functor, fn, on_integers)                                \
  KILN_REGISTER_OP(name)                                                                \
      .schema(#name "(Tensor self) -> Tensor")                                          \
      .meta(meta::unary_bool)                                                           \
      .cpu(classify_kernel<scalar::Functor>(#name, on_integers))                        \
      .samples(classify_samples)                                                        \
      .reference(pointwise::reference([](double x) { return std::fn(x) ? 1.0 : 0.0; })) \
      .dtypes(pointwise::kAll)                                                          \
      .lowering(classify_lowering(#Functor, on_integers));
KILN_CLASSIFY_OP(isnan, IsNan, isnan, false)
KILN_CLASSIFY_OP(isinf, IsInf, isinf, false)
KILN_CLASSIFY_OP(isfinite, IsFinite, isfinite, true)
#undef KILN_CLASSIFY_OP

KILN_REGISTER_OP(nan_to_num)
    .schema(
        "nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> "
        "Tensor")
    .meta(meta::unary)
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const ScalarType dt = out[0].dtype();
      if (!is_floating_point(dt)) return cpu::copy(out[0], in[0]);
      pointwise::run<1, Dtypes::Floating>("nan_to_num", dt, in, out[0], nan_to_num_functor(a, dt));
    })
    .backward([](const BackwardContext& c) {
      return grads(where(c.input(0).isfinite(), c.grad(), zeros_like(c.grad())));
    })
    .samples([](ScalarType dt) {
      const Attrs defaults{std::monostate{}, std::monostate{}, std::monostate{}};
      auto s = pointwise::with_attrs(classify_samples(dt), defaults);
      // Default replacements are +-DBL_MAX: the finite-difference objective overflows.
      for (auto& x : s) x.check_grad = x.desc != "nan and inf";
      if (is_floating_point(dt)) s.push_back({{special_values(dt)}, {1.0, 100.0, -100.0}, "given"});
      return s;
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      double big = DBL_MAX;  // the input dtype's largest finite value
      if (in[0].dtype() == kFloat32) big = FLT_MAX;
      if (in[0].dtype() == kFloat16) big = 65504.0;
      if (in[0].dtype() == kBFloat16) big = 0x1.fep127;
      const double nan = a.opt_f(0).value_or(0.0), posinf = a.opt_f(1).value_or(big),
                   neginf = a.opt_f(2).value_or(-big);
      return pointwise::reference_fn([=](const double* v, const Attrs&) {
        if (std::isnan(v[0])) return nan;
        if (std::isinf(v[0])) return v[0] > 0 ? posinf : neginf;
        return v[0];
      })(in, a);
    })
    .dtypes(pointwise::kAll)
    .lowering(lowering::Lowering::of("NanToNum", [](const lowering::Call& c) {
      if (!is_floating_point(c.output)) return lowering::input(0, c.output);
      return pointwise::apply_expr<Dtypes::Floating>(
          "NanToNum", lowering::params_of(nan_to_num_functor(c.attrs, c.output)), 1, c.output);
    }));

namespace {
[[maybe_unused]] const bool kInplaceRegistered = pointwise::register_inplace(
    {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not",
     "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "nan_to_num"});
}  // namespace

}  // namespace kiln
