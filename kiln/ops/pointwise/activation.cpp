// Activation functions: sigmoid, logsigmoid, relu (and its fused threshold_backward), relu6,
// leaky_relu, elu, selu, gelu (and its fused gelu_backward), silu, mish, softplus, hardtanh,
// hardsigmoid, hardswish.
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

// Unary samples once per attribute set.
std::vector<OpSample> unary_with(ScalarType dt, double low, double high,
                                 std::initializer_list<Attrs> variants) {
  std::vector<OpSample> all;
  for (const Attrs& a : variants) {
    for (auto& s : samples::unary(dt, low, high)) {
      s.attrs = a;
      s.desc.append(" ").append(a.to_string());
      all.push_back(std::move(s));
    }
  }
  return all;
}

// The gradient where lo < x < hi, zero elsewhere (hardtanh, relu6).
Tensor inside_grad(const Tensor& grad, const Tensor& x, double lo, double hi) {
  return where((x > lo) & (x < hi), grad, zeros_like(grad));
}

// d/dx of scale * (x > 0 ? x : alpha * (exp(input_scale * x) - 1)).
Tensor elu_grad(const Tensor& grad, const Tensor& x, double alpha, double scale,
                double input_scale) {
  Tensor negative = grad * (x * input_scale).exp() * (input_scale * scale * alpha);
  return where(x > 0, grad * scale, negative);
}

const std::string& gelu_mode(const Attrs& a, const char* op = "gelu") {
  const std::string& m = a.str(0);
  KILN_CHECK(m == "none" || m == "tanh", op,
             ": approximate argument must be either none or tanh (got '", m, "')");
  return m;
}

Tensor threshold_backward(const Tensor& grad, const Tensor& x, const Scalar& threshold) {
  static const OpDef& op = get_op("threshold_backward");
  return pointwise::call(op, {grad, x}, {threshold});
}

Tensor gelu_backward(const Tensor& grad, const Tensor& x, const std::string& approximate) {
  static const OpDef& op = get_op("gelu_backward");
  return pointwise::call(op, {grad, x}, {approximate});
}

// d^2 gelu(x) / dx^2, for the double backward.
Tensor gelu_second_derivative(const Tensor& x, bool tanh_approx) {
  if (!tanh_approx) {
    const double inv_sqrt_2pi = 0.5 * std::numbers::inv_sqrtpi * std::numbers::sqrt2;
    Tensor pdf = (x.square() * -0.5).exp() * inv_sqrt_2pi;
    return pdf * (2 - x.square());
  }
  // gelu = x s with s = sigmoid(2 y), y = beta (x + kappa x^3).
  const double beta = std::numbers::sqrt2 * std::numbers::inv_sqrtpi, kappa = 0.044715;
  Tensor s = ((x + x.pow(3) * kappa) * (2 * beta)).sigmoid();
  Tensor dy = (x.square() * (3 * kappa) + 1) * beta, d2y = x * (6 * beta * kappa);
  Tensor ds = s * (1 - s) * dy * 2;
  Tensor d2s = s * (1 - s) * d2y * 2 + ds * dy * (1 - s * 2) * 2;
  return ds * 2 + x * d2s;
}

// The functors of the ops with parameters, from their attributes (kernel and lowering both).
scalar::ThresholdBackward threshold_backward_of(const Attrs& a) {
  return {a.scalar(0).to_double()};
}
scalar::Hardtanh relu6_of(const Attrs&) { return {0, 6}; }
scalar::Hardtanh hardtanh_of(const Attrs& a) { return {a.f(0), a.f(1)}; }
scalar::LeakyRelu leaky_relu_of(const Attrs& a) { return {a.f(0)}; }
scalar::Elu elu_of(const Attrs& a) { return {a.f(0), a.f(1), a.f(2)}; }
scalar::Elu selu_of(const Attrs&) { return {scalar::kSeluAlpha, scalar::kSeluScale, 1}; }
scalar::Softplus softplus_of(const Attrs& a) { return {a.f(0), a.f(1)}; }

// gelu and its backward: the functor by the approximation (the kernel's choice).
lowering::Lowering gelu_lowering(size_t n, const char* op, const char* exact, const char* tanh) {
  return lowering::Lowering::of(exact, [=](const lowering::Call& c) {
    return pointwise::apply_expr<Dtypes::HotFloating>(
        gelu_mode(c.attrs, op) == "tanh" ? tanh : exact, {}, n, c.output);
  });
}

}  // namespace

KILN_POINTWISE_ENTRY unary_float_op<scalar::Sigmoid, Dtypes::HotFloating>("sigmoid", "Sigmoid", -4,
                                                                          4)
    .save_outputs()
    .backward([](const BackwardContext& c) {
      return grads(c.grad() * c.output() * (1 - c.output()));
    })
    .reference(reference([](double x) { return 1 / (1 + std::exp(-x)); }));

KILN_POINTWISE_ENTRY unary_float_op<scalar::LogSigmoid>("logsigmoid", "LogSigmoid", -4, 4)
    .backward([](const BackwardContext& c) { return grads(c.grad() * (-c.input(0)).sigmoid()); })
    .reference(reference([](double x) { return -std::log1p(std::exp(-x)); }))
    .dtypes(pointwise::kFloating);

KILN_REGISTER_OP(relu)
    .schema("relu(Tensor self) -> Tensor")
    .meta(meta::unary)
    .cpu(pointwise::kernel<scalar::Relu, 1, Dtypes::Numeric | Dtypes::Native16>("relu"))
    .save_outputs()
    .backward([](const BackwardContext& c) {
      return grads(threshold_backward(c.grad(), c.output(), 0));
    })
    .samples([](ScalarType dt) { return samples::unary(dt); })
    .reference(reference([](double x) { return x > 0 ? x : 0.0; }))
    .dtypes(pointwise::kNumeric)
    .error_samples(pointwise::errors(1, kBool))
    .lowering(pointwise::lower<scalar::Relu, 1, Dtypes::Numeric | Dtypes::Native16>("Relu"));

KILN_REGISTER_OP(threshold_backward)
    .schema("threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor")
    .meta(meta::broadcast("threshold_backward", meta::ResultKind::Promote))
    .cpu(pointwise::kernel_with<2, Dtypes::Numeric | Dtypes::Native16>("threshold_backward",
                                                                       threshold_backward_of))
    .save_inputs({1})
    .backward([](const BackwardContext& c) {
      return grads(threshold_backward(c.grad(), c.input(1), c.attrs.scalar(0)),
                   zeros_like(c.input(1)));
    })
    .samples([](ScalarType dt) {
      return pointwise::with_attrs(samples::binary(dt), {Scalar(0.5)});
    })
    .reference(pointwise::reference_fn([](const double* v, const Attrs& a) {
      return v[1] > a.scalar(0).to_double() ? v[0] : 0;
    }))
    .dtypes(pointwise::kNumeric)
    .error_samples(pointwise::errors(2, kBool, {Scalar(0)}))
    .lowering(pointwise::lower_with<2, Dtypes::Numeric | Dtypes::Native16>("ThresholdBackward",
                                                                           threshold_backward_of));

KILN_REGISTER_OP(relu6)
    .schema("relu6(Tensor self) -> Tensor")
    .meta(meta::unary)
    .cpu(pointwise::kernel_with<1, Dtypes::Numeric>("relu6", relu6_of))
    .backward([](const BackwardContext& c) {
      return grads(inside_grad(c.grad(), c.input(0), 0, 6));
    })
    .samples([](ScalarType dt) { return samples::unary(dt, -3, 9); })
    .reference(reference([](double x) { return std::min(std::max(x, 0.0), 6.0); }))
    .dtypes(pointwise::kNumeric)
    .error_samples(pointwise::errors(1, kBool))
    .lowering(pointwise::lower_with<1, Dtypes::Numeric>("Hardtanh", relu6_of));

KILN_REGISTER_OP(hardtanh)
    .schema("hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor")
    .meta(meta::unary)
    .cpu(pointwise::kernel_with<1, Dtypes::Numeric>("hardtanh", hardtanh_of))
    .backward([](const BackwardContext& c) {
      return grads(inside_grad(c.grad(), c.input(0), c.attrs.f(0), c.attrs.f(1)));
    })
    .samples([](ScalarType dt) {
      return unary_with(dt, -3, 3, {{-1.0, 1.0}, {-2.0, 0.5}});
    })
    .reference(pointwise::reference_fn([](const double* v, const Attrs& a) {
      return std::min(std::max(v[0], a.f(0)), a.f(1));
    }))
    .dtypes(pointwise::kNumeric)
    .error_samples(pointwise::errors(1, kBool, {Scalar(-1), Scalar(1)}))
    .lowering(pointwise::lower_with<1, Dtypes::Numeric>("Hardtanh", hardtanh_of));

KILN_REGISTER_OP(leaky_relu)
    .schema("leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor")
    .meta(meta::unary)
    .cpu(pointwise::kernel_with<1, Dtypes::Floating>("leaky_relu", leaky_relu_of))
    .backward([](const BackwardContext& c) {
      return grads(where(c.input(0) > 0, c.grad(), c.grad() * c.attrs.f(0)));
    })
    .samples([](ScalarType dt) {
      return unary_with(dt, -3, 3, {{0.01}, {0.2}});
    })
    .reference(pointwise::reference_fn([](const double* v, const Attrs& a) {
      return v[0] > 0 ? v[0] : v[0] * a.f(0);
    }))
    .dtypes(pointwise::kFloating)
    .error_samples(pointwise::errors(1, kInt64, {Scalar(0.01)}))
    .lowering(pointwise::lower_with<1, Dtypes::Floating>("LeakyRelu", leaky_relu_of));

KILN_REGISTER_OP(elu)
    .schema("elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor")
    .meta(meta::unary)
    .cpu(pointwise::kernel_with<1, Dtypes::Floating>("elu", elu_of))
    .backward([](const BackwardContext& c) {
      const Attrs& a = c.attrs;
      return grads(elu_grad(c.grad(), c.input(0), a.f(0), a.f(1), a.f(2)));
    })
    .samples([](ScalarType dt) {
      return unary_with(dt, -3, 3, {{1.0, 1.0, 1.0}, {0.5, 2.0, 1.5}});
    })
    .reference(pointwise::reference_fn([](const double* v, const Attrs& a) {
      const double x = v[0];
      return x > 0 ? a.f(1) * x : a.f(1) * a.f(0) * (std::exp(x * a.f(2)) - 1);
    }))
    .dtypes(pointwise::kFloating)
    .error_samples(pointwise::errors(1, kInt64, {Scalar(1), Scalar(1), Scalar(1)}))
    .lowering(pointwise::lower_with<1, Dtypes::Floating>("Elu", elu_of));

KILN_REGISTER_OP(selu)
    .schema("selu(Tensor self) -> Tensor")
    .meta(meta::unary)
    .cpu(pointwise::kernel_with<1, Dtypes::Floating>("selu", selu_of))
    .backward([](const BackwardContext& c) {
      return grads(elu_grad(c.grad(), c.input(0), scalar::kSeluAlpha, scalar::kSeluScale, 1));
    })
    .samples([](ScalarType dt) { return samples::unary(dt); })
    .reference(reference([](double x) {
      const double alpha = 1.6732632423543772848, scale = 1.0507009873554804934;
      return x > 0 ? scale * x : scale * alpha * (std::exp(x) - 1);
    }))
    .dtypes(pointwise::kFloating)
    .error_samples(pointwise::errors(1, kInt64))
    .lowering(pointwise::lower_with<1, Dtypes::Floating>("Elu", selu_of));

KILN_REGISTER_OP(gelu)
    .schema("gelu(Tensor self, str approximate='none') -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      gelu_mode(a);
      return meta::unary(in, a);
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      if (gelu_mode(a) == "tanh") {
        pointwise::run<1, Dtypes::HotFloating>("gelu", out[0].dtype(), in, out[0],
                                               scalar::GeluTanh{});
      } else {
        pointwise::run<1, Dtypes::HotFloating>("gelu", out[0].dtype(), in, out[0], scalar::Gelu{});
      }
    })
    .backward([](const BackwardContext& c) {
      return grads(gelu_backward(c.grad(), c.input(0), gelu_mode(c.attrs)));
    })
    .samples([](ScalarType dt) {
      return unary_with(dt, -3, 3, {{std::string("none")}, {std::string("tanh")}});
    })
    .reference(pointwise::reference_fn([](const double* v, const Attrs& a) {
      const double x = v[0];
      if (a.str(0) == "none") return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
      const double inner = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
      return 0.5 * x * (1 + std::tanh(inner));
    }))
    .dtypes(pointwise::kFloating)
    .error_samples([] {
      auto s = pointwise::errors(1, kInt64, {std::string("none")})();
      s.push_back({{samples::make({3}, kFloat32)},
                   {std::string("erf")},
                   "approximate argument must be either none or tanh (got 'erf')",
                   "approximate"});
      return s;
    })
    .lowering(gelu_lowering(1, "gelu", "Gelu", "GeluTanh"));

KILN_REGISTER_OP(gelu_backward)
    .schema("gelu_backward(Tensor grad_output, Tensor self, str approximate='none') -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      gelu_mode(a, "gelu_backward");
      return meta::broadcast("gelu_backward", meta::ResultKind::Float)(in, a);
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      if (gelu_mode(a, "gelu_backward") == "tanh") {
        pointwise::run<2, Dtypes::HotFloating>("gelu_backward", out[0].dtype(), in, out[0],
                                               scalar::GeluTanhBackward{});
      } else {
        pointwise::run<2, Dtypes::HotFloating>("gelu_backward", out[0].dtype(), in, out[0],
                                               scalar::GeluBackward{});
      }
    })
    .backward([](const BackwardContext& c) {
      const Tensor &grad = c.input(0), &x = c.input(1);
      return grads(gelu_backward(c.grad(), x, gelu_mode(c.attrs)),
                   c.grad() * grad * gelu_second_derivative(x, gelu_mode(c.attrs) == "tanh"));
    })
    .samples([](ScalarType dt) {
      std::vector<OpSample> all;
      for (const char* mode : {"none", "tanh"})
        for (auto& s : pointwise::with_attrs(samples::binary(dt), {std::string(mode)}))
          all.push_back(std::move(s));
      return all;
    })
    .reference(pointwise::reference_fn([](const double* v, const Attrs& a) {
      const double x = v[1];
      if (a.str(0) == "none") {
        const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
        return v[0] * (0.5 * (1 + std::erf(x / std::sqrt(2.0))) + x * pdf);
      }
      const double beta = std::sqrt(2 / M_PI), kappa = 0.044715;
      const double t = std::tanh(beta * (x + kappa * x * x * x));
      return v[0] * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * beta * (1 + 3 * kappa * x * x));
    }))
    .dtypes(pointwise::kFloating)
    .error_samples([] {
      auto s = pointwise::errors(2, ScalarType::Undefined, {std::string("none")})();
      const Tensor x = samples::make({3}, kFloat32);
      s.push_back({{x, x},
                   {std::string("erf")},
                   "approximate argument must be either none or tanh (got 'erf')",
                   "approximate"});
      return s;
    })
    .lowering(gelu_lowering(2, "gelu_backward", "GeluBackward", "GeluTanhBackward"));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Silu, Dtypes::HotFloating>("silu", "Silu", -4, 4)
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      Tensor s = x.sigmoid();
      return grads(c.grad() * s * (x * (1 - s) + 1));
    })
    .reference(reference([](double x) { return x / (1 + std::exp(-x)); }))
    .dtypes(pointwise::kFloating);

KILN_POINTWISE_ENTRY unary_float_op<scalar::Mish>("mish", "Mish", -4, 4)
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      Tensor t = softplus(x).tanh();
      return grads(c.grad() * (t + x * x.sigmoid() * (1 - t.square())));
    })
    .reference(reference([](double x) { return x * std::tanh(std::log1p(std::exp(x))); }))
    .dtypes(pointwise::kFloating);

KILN_REGISTER_OP(softplus)
    .schema("softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor")
    .meta(meta::unary)
    .cpu(pointwise::kernel_with<1, Dtypes::Floating>("softplus", softplus_of))
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      const double beta = c.attrs.f(0), threshold = c.attrs.f(1);
      Tensor bx = x * beta;
      return grads(where(bx > threshold, c.grad(), c.grad() * bx.sigmoid()));
    })
    .samples([](ScalarType dt) {
      return unary_with(dt, -3, 3, {{1.0, 20.0}, {2.0, 3.0}});
    })
    .reference(pointwise::reference_fn([](const double* v, const Attrs& a) {
      const double x = v[0], beta = a.f(0);
      return x * beta > a.f(1) ? x : std::log(1 + std::exp(beta * x)) / beta;
    }))
    .dtypes(pointwise::kFloating)
    .error_samples(pointwise::errors(1, kInt64, {Scalar(1), Scalar(20)}))
    .lowering(pointwise::lower_with<1, Dtypes::Floating>("Softplus", softplus_of));

KILN_POINTWISE_ENTRY unary_float_op<scalar::Hardsigmoid>("hardsigmoid", "Hardsigmoid", -5, 5)
    .backward([](const BackwardContext& c) {
      return grads(inside_grad(c.grad(), c.input(0), -3, 3) / 6);
    })
    .reference(reference([](double x) { return std::min(std::max(x / 6 + 0.5, 0.0), 1.0); }))
    .dtypes(pointwise::kFloating);

KILN_POINTWISE_ENTRY unary_float_op<scalar::Hardswish>("hardswish", "Hardswish", -5, 5)
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      Tensor middle = where(x <= 3, c.grad() * (x / 3 + 0.5), c.grad());
      return grads(where(x < -3, zeros_like(c.grad()), middle));
    })
    .reference(reference([](double x) { return x * std::min(std::max(x + 3, 0.0), 6.0) / 6; }))
    .dtypes(pointwise::kFloating);

namespace {
[[maybe_unused]] const bool kInplaceRegistered =
    pointwise::register_inplace({"sigmoid", "relu", "hardtanh", "leaky_relu", "elu", "selu", "silu",
                                 "mish", "hardsigmoid", "hardswish"});
}  // namespace

}  // namespace kiln
