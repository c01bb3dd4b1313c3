// Ops of three operands: where, masked_fill, lerp, addcmul, addcdiv, clamp (scalar or tensor
// bounds; clamp_min/clamp_max are clamp with one bound).
#include "kiln/backend/scalar.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/pointwise/util.h"

namespace kiln {
namespace {
namespace Dtypes = pointwise::Dtypes;
using pointwise::grads;

struct Range {
  double low, high;
};

// Three operands: same shape, broadcasting, a 0-dim third operand, non-contiguous, zero-size.
std::vector<OpSample> ternary_samples(ScalarType dt, Range r0, Range r1, Range r2) {
  using samples::make;
  return {
      {{make({3, 4}, dt, r0.low, r0.high), make({3, 4}, dt, r1.low, r1.high),
        make({3, 4}, dt, r2.low, r2.high)},
       {},
       "same shape"},
      {{make({3, 1}, dt, r0.low, r0.high), make({1, 4}, dt, r1.low, r1.high),
        make({4}, dt, r2.low, r2.high)},
       {},
       "broadcast"},
      {{make({5}, dt, r0.low, r0.high), make({5}, dt, r1.low, r1.high),
        make({}, dt, r2.low, r2.high)},
       {},
       "0-dim third"},
      {{make({4, 5}, dt, r0.low, r0.high, true), make({5, 4}, dt, r1.low, r1.high).t(),
        make({4, 5}, dt, r2.low, r2.high)},
       {},
       "non-contiguous"},
      {{make({0, 4}, dt, r0.low, r0.high), make({4}, dt, r1.low, r1.high),
        make({0, 4}, dt, r2.low, r2.high)},
       {},
       "zero-size"},
  };
}

// A Python number of the sample dtype's kind.
Scalar number(ScalarType dt, double v) {
  if (dt == kBool) return Scalar(v != 0);
  return is_floating_point(dt) ? Scalar(v) : Scalar(static_cast<int64_t>(v));
}

std::vector<TensorSpec> where_meta(const std::vector<Tensor>& in, const Attrs&) {
  KILN_CHECK(in[0].dtype() == kBool,
             "where: expected condition to be a boolean tensor, but got a tensor with dtype ",
             in[0].dtype());
  SymShape shape =
      meta::broadcast_shapes("where", {in[0].sym_sizes(), in[1].sym_sizes(), in[2].sym_sizes()});
  Device dev = in[1].dim() > 0 || in[2].dim() == 0 ? in[1].device() : in[2].device();
  return {meta::spec(std::move(shape), meta::result_type({in[1], in[2]}), dev)};
}

// out = cond ? a : b with a and b in the output dtype.
void select_kernel(const char* op, const Tensor& out, const Tensor& cond, const Tensor& a,
                   const Tensor& b) {
  const ScalarType dt = out.dtype();
  cpu::visit_all(dt, op, [&](auto tag) {
    using T = decltype(tag);
    Tensor x = pointwise::as_dtype(a, dt), y = pointwise::as_dtype(b, dt);
    cpu::pointwise<T, bool, T, T>(out, scalar::Where{}, {&cond, &x, &y});
  });
}

// The lowering of select_kernel with the condition, the value if true and if false at these
// input positions.
lowering::Lowering select_lowering(int cond, int a, int b) {
  return lowering::Lowering::of("Where", [=](const lowering::Call& c) {
    const ScalarType dt = c.output;
    const ScalarType ct = dt == kFloat16 || dt == kBFloat16 ? kFloat32 : dt;
    return lowering::call(
        "Where", {}, {lowering::input(cond, kBool), lowering::input(a, ct), lowering::input(b, ct)},
        ct);
  });
}

std::vector<TensorSpec> masked_fill_meta(const std::vector<Tensor>& in, const Attrs&) {
  const Tensor &self = in[0], &mask = in[1], &value = in[2];
  KILN_CHECK(mask.dtype() == kBool,
             "masked_fill: only supports boolean masks, but got mask with dtype ", mask.dtype());
  KILN_CHECK(value.dim() == 0,
             "masked_fill: only supports a 0-dimensional value tensor, but got a tensor of shape ",
             value.sym_sizes());
  SymShape shape = meta::broadcast_shapes("masked_fill", {self.sym_sizes(), mask.sym_sizes()});
  return {meta::spec(std::move(shape), self.dtype(), self.device())};
}

std::vector<OpSample> masked_fill_samples(ScalarType dt) {
  using samples::make;
  Tensor mask34 = make({3, 4}, kBool), mask4 = make({4}, kBool);
  return {
      {{make({3, 4}, dt), mask34, wrapped_scalar(number(dt, 2))}, {}, "number value"},
      {{make({3, 4}, dt), mask4, make({}, dt)}, {}, "0-dim tensor value, broadcast mask"},
      {{make({4}, dt), mask34, wrapped_scalar(number(dt, 1))}, {}, "mask broadcasts self"},
      {{make({4, 5}, dt, -3, 3, true), make({5, 4}, kBool).t(), make({}, dt)},
       {},
       "non-contiguous"},
      {{make({0, 4}, dt), mask4, make({}, dt)}, {}, "zero-size"},
  };
}

std::vector<TensorSpec> lerp_meta(const std::vector<Tensor>& in, const Attrs& a) {
  const Tensor &self = in[0], &end = in[1], &weight = in[2];
  KILN_CHECK(end.dtype() == self.dtype(), "lerp: expected dtype ", self.dtype(),
             " for `end` but got dtype ", end.dtype());
  KILN_CHECK(weight.impl()->is_wrapped_number() || weight.dtype() == self.dtype(),
             "lerp: expected dtype ", self.dtype(), " for `weight` but got dtype ", weight.dtype());
  return meta::broadcast("lerp", meta::ResultKind::Promote)(in, a);
}

std::vector<OpSample> lerp_samples(ScalarType dt) {
  auto s = ternary_samples(dt, {-3, 3}, {-3, 3}, {0, 1});
  s.push_back({{samples::make({3, 4}, dt), samples::make({3, 4}, dt), wrapped_scalar(0.3)},
               {},
               "number weight 0.3"});
  s.push_back({{samples::make({4}, dt), samples::make({3, 4}, dt), wrapped_scalar(0.8)},
               {},
               "number weight 0.8"});
  return s;
}

std::vector<OpSample> addc_samples(ScalarType dt, bool divides) {
  auto s = ternary_samples(dt, {-3, 3}, {-3, 3}, {-3, 3});
  if (divides) s = pointwise::nonzero_input(std::move(s), 2);
  for (auto& x : s) x.attrs = {number(dt, 1)};
  auto scaled = ternary_samples(dt, {-3, 3}, {-3, 3}, {-3, 3});
  if (divides) scaled = pointwise::nonzero_input(std::move(scaled), 2);
  scaled[0].attrs = {is_floating_point(dt) ? Scalar(0.5) : Scalar(2)};
  scaled[0].desc += ", scaled";
  s.push_back(scaled[0]);
  return s;
}

std::vector<TensorSpec> clamp_meta(const std::vector<Tensor>& in, const Attrs& a) {
  KILN_CHECK(in[1].defined() || in[2].defined(),
             "clamp: At least one of 'min' or 'max' must not be None");
  return meta::broadcast("clamp", meta::ResultKind::Promote)(in, a);
}

scalar::Addcmul addcmul_of(const Attrs& a) { return {a.f(0)}; }
scalar::Addcdiv addcdiv_of(const Attrs& a) { return {a.f(0)}; }

// The lowering of clamp_kernel.
lowering::ExprPtr clamp_expr(const lowering::Call& c) {
  const bool lo = c.inputs[1].defined(), hi = c.inputs[2].defined();
  auto e = pointwise::apply_expr<Dtypes::Numeric>(lo && hi ? "Clamp"
                                                  : lo     ? "ClampMin"
                                                           : "ClampMax",
                                                  {}, lo && hi ? 3 : 2, c.output);
  if (!e || (lo && hi) || lo) return e;
  auto bound = lowering::input(2, e->dtype);  // clamp(max=...) reads input 2
  return lowering::call("ClampMax", {}, {e->args[0], bound}, e->dtype);
}

void clamp_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
  const ScalarType dt = out[0].dtype();
  const Tensor &self = in[0], &lo = in[1], &hi = in[2];
  if (lo.defined() && hi.defined()) {
    pointwise::run<3, Dtypes::Numeric>("clamp", dt, in, out[0], scalar::Clamp{});
  } else if (lo.defined()) {
    pointwise::run<2, Dtypes::Numeric>("clamp", dt, {self, lo}, out[0], scalar::ClampMin{});
  } else {
    pointwise::run<2, Dtypes::Numeric>("clamp", dt, {self, hi}, out[0], scalar::ClampMax{});
  }
}

std::vector<Tensor> clamp_backward(const BackwardContext& c) {
  const Tensor &x = c.input(0), &lo = c.input(1), &hi = c.input(2), &g = c.grad();
  Tensor zero = zeros_like(g);
  Tensor inside;
  if (lo.defined()) inside = x >= lo;
  if (hi.defined()) inside = inside.defined() ? inside & (x <= hi) : (x <= hi);
  Tensor g_lo, g_hi;
  if (c.needs_grad(1)) {
    Tensor below = x < lo;
    if (hi.defined()) below = below & (lo < hi);
    g_lo = where(below, g, zero);
  }
  if (c.needs_grad(2)) {
    Tensor above = x > hi;
    if (lo.defined()) above = above | (hi < lo);
    g_hi = where(above, g, zero);
  }
  return grads(c.needs_grad(0) ? where(inside, g, zero) : Tensor(), g_lo, g_hi);
}

std::vector<OpSample> clamp_samples(ScalarType dt) {
  using samples::make;
  auto s = ternary_samples(dt, {-3, 3}, {-2, 0}, {0, 2});
  const double lo = dt == kUInt8 ? 1 : -1;  // a bound must be representable in the dtype
  s.push_back({{make({3, 4}, dt), wrapped_scalar(number(dt, lo)), wrapped_scalar(number(dt, 2))},
               {},
               "number bounds"});
  s.push_back({{make({3, 4}, dt), make({4}, dt, -2, 0), Tensor()}, {}, "min only"});
  s.push_back({{make({3, 4}, dt), Tensor(), wrapped_scalar(number(dt, 1))}, {}, "max only"});
  return s;
}

}  // namespace

KILN_REGISTER_OP(where)
    .schema("where(Tensor condition, Tensor self, Tensor other) -> Tensor")
    .meta(where_meta)
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
      select_kernel("where", out[0], in[0], in[1], in[2]);
    })
    .save_inputs({0})
    .backward([](const BackwardContext& c) {
      const Tensor &cond = c.input(0), &g = c.grad();
      return grads(Tensor(), c.needs_grad(1) ? where(cond, g, zeros_like(g)) : Tensor(),
                   c.needs_grad(2) ? where(cond, zeros_like(g), g) : Tensor());
    })
    .samples([](ScalarType dt) {
      using samples::make;
      return std::vector<OpSample>{
          {{make({3, 4}, kBool), make({3, 4}, dt), make({3, 4}, dt)}, {}, "same shape"},
          {{make({3, 1}, kBool), make({1, 4}, dt), make({}, dt)}, {}, "broadcast"},
          {{make({5}, kBool), make({5}, dt), wrapped_scalar(number(dt, 1))}, {}, "number other"},
          {{make({5, 4}, kBool).t(), make({4, 5}, dt, -3, 3, true), make({4, 5}, dt)},
           {},
           "non-contiguous"},
          {{make({0, 4}, kBool), make({4}, dt), make({0, 4}, dt)}, {}, "zero-size"},
      };
    })
    .reference(pointwise::reference([](double c, double a, double b) { return c != 0 ? a : b; }))
    .dtypes(pointwise::kAll)
    .error_samples([] {
      using samples::make;
      return std::vector<OpErrorSample>{
          {{make({2, 3}, kFloat32), make({2, 3}, kFloat32), make({2, 3}, kFloat32)},
           {},
           "expected condition to be a boolean tensor, but got a tensor with dtype float32",
           "float condition"},
          {{make({2, 3}, kBool), make({4}, kFloat32), make({4}, kFloat32)},
           {},
           "shapes [2, 3] and [4] and [4] cannot be broadcast together",
           "shapes"},
      };
    })
    .lowering(select_lowering(0, 1, 2));

KILN_REGISTER_OP(masked_fill)
    .schema("masked_fill(Tensor self, Tensor mask, Tensor value) -> Tensor")
    .meta(masked_fill_meta)
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
      select_kernel("masked_fill", out[0], in[1], in[2], in[0]);
    })
    .save_inputs({1})
    .backward([](const BackwardContext& c) {
      const Tensor &mask = c.input(1), &g = c.grad();
      return grads(c.needs_grad(0) ? where(mask, zeros_like(g), g) : Tensor(), Tensor(),
                   c.needs_grad(2) ? where(mask, g, zeros_like(g)) : Tensor());
    })
    .samples(masked_fill_samples)
    .reference(pointwise::reference([](double x, double m, double v) { return m != 0 ? v : x; }))
    .dtypes(pointwise::kAll)
    .error_samples([] {
      using samples::make;
      const Tensor self = make({2, 3}, kFloat32), value = make({}, kFloat32);
      return std::vector<OpErrorSample>{
          {{self, make({2, 3}, kFloat32), value},
           {},
           "only supports boolean masks, but got mask with dtype float32",
           "float mask"},
          {{self, make({2, 3}, kBool), make({2}, kFloat32)},
           {},
           "only supports a 0-dimensional value tensor, but got a tensor of shape [2]",
           "value of one dimension"},
          {{self, make({4}, kBool), value},
           {},
           "shapes [2, 3] and [4] cannot be broadcast",
           "mask that does not broadcast"},
      };
    })
    .lowering(select_lowering(1, 2, 0));

KILN_REGISTER_OP(lerp)
    .schema("lerp(Tensor self, Tensor end, Tensor weight) -> Tensor")
    .meta(lerp_meta)
    .cpu(pointwise::kernel<scalar::Lerp, 3, Dtypes::Floating>("lerp"))
    .backward([](const BackwardContext& c) {
      const Tensor &a = c.input(0), &b = c.input(1), &w = c.input(2), &g = c.grad();
      return grads(c.needs_grad(0) ? g * (1 - w) : Tensor(), c.needs_grad(1) ? g * w : Tensor(),
                   c.needs_grad(2) ? g * (b - a) : Tensor());
    })
    .samples(lerp_samples)
    .reference(pointwise::reference([](double a, double b, double w) { return a + w * (b - a); }))
    .dtypes(pointwise::kFloating)
    .error_samples([] {
      using samples::make;
      auto s = pointwise::errors(3, kInt64)();
      const Tensor x = make({2, 3}, kFloat32);
      s.push_back({{x, x.to(kFloat64), x},
                   {},
                   "expected dtype float32 for `end` but got dtype float64",
                   "end's dtype"});
      s.push_back({{x, x, x.to(kFloat64)},
                   {},
                   "expected dtype float32 for `weight` but got dtype float64",
                   "weight's dtype"});
      return s;
    })
    .lowering(pointwise::lower<scalar::Lerp, 3, Dtypes::Floating>("Lerp"));

KILN_REGISTER_OP(addcmul)
    .schema("addcmul(Tensor self, Tensor tensor1, Tensor tensor2, Scalar value=1) -> Tensor")
    .meta(meta::broadcast("addcmul", meta::ResultKind::Promote))
    .cpu(pointwise::kernel_with<3, Dtypes::Numeric>("addcmul", addcmul_of))
    .save_inputs({1, 2})
    .backward([](const BackwardContext& c) {
      const double v = c.attrs.f(0);
      const Tensor &t1 = c.input(1), &t2 = c.input(2), &g = c.grad();
      return grads(g, c.needs_grad(1) ? g * t2 * v : Tensor(),
                   c.needs_grad(2) ? g * t1 * v : Tensor());
    })
    .samples([](ScalarType dt) { return addc_samples(dt, false); })
    .reference(pointwise::reference_fn([](const double* v, const Attrs& a) {
      return v[0] + a.f(0) * v[1] * v[2];
    }))
    .dtypes(pointwise::kNumeric)
    .error_samples(pointwise::errors(3, kBool, {Scalar(1)}))
    .lowering(pointwise::lower_with<3, Dtypes::Numeric>("Addcmul", addcmul_of));

KILN_REGISTER_OP(addcdiv)
    .schema("addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, Scalar value=1) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      KILN_CHECK(!(is_integral(in[1].dtype(), true) && is_integral(in[2].dtype(), true)),
                 "addcdiv: Integer division with addcdiv is no longer supported (got tensor1 of ",
                 in[1].dtype(), " and tensor2 of ", in[2].dtype(),
                 "); use (input + value * trunc(tensor1 / tensor2)).to(input.dtype()) for integer "
                 "inputs or (input + value * tensor1 / tensor2) for float inputs.");
      return meta::broadcast("addcdiv", meta::ResultKind::Promote)(in, a);
    })
    .cpu(pointwise::kernel_with<3, Dtypes::Floating>("addcdiv", addcdiv_of))
    .save_inputs({1, 2})
    .backward([](const BackwardContext& c) {
      const double v = c.attrs.f(0);
      const Tensor &t1 = c.input(1), &t2 = c.input(2), &g = c.grad();
      return grads(g, c.needs_grad(1) ? g * v / t2 : Tensor(),
                   c.needs_grad(2) ? -g * v * t1 / (t2 * t2) : Tensor());
    })
    .samples([](ScalarType dt) { return addc_samples(dt, true); })
    .reference(pointwise::reference_fn([](const double* v, const Attrs& a) {
      return v[0] + a.f(0) * v[1] / v[2];
    }))
    .dtypes(pointwise::kFloating)
    .error_samples([] {
      auto s = pointwise::errors(3, ScalarType::Undefined, {Scalar(1)})();
      const Tensor i = tensor({1, 2}, kInt64);
      s.push_back({{samples::make({2}, kFloat32), i, i},
                   {Scalar(1)},
                   "no longer supported (got tensor1 of int64 and tensor2 of int64)",
                   "integer division"});
      return s;
    })
    .lowering(pointwise::lower_with<3, Dtypes::Floating>("Addcdiv", addcdiv_of));

KILN_REGISTER_OP(clamp)
    .schema("clamp(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor")
    .meta(clamp_meta)
    .cpu(clamp_kernel)
    .backward(clamp_backward)
    .samples(clamp_samples)
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const bool has_min = in[1].defined(), has_max = in[2].defined();
      return pointwise::reference_fn([=](const double* v, const Attrs&) {
        double x = v[0];
        size_t k = 1;
        if (has_min) x = std::max(x, v[k++]);
        if (has_max) x = std::min(x, v[k]);
        return x;
      })(in, a);
    })
    .dtypes(pointwise::kNumeric)
    .error_samples([] {
      auto s = pointwise::errors(3, kBool)();
      s.push_back({{samples::make({2}, kFloat32), Tensor(), Tensor()},
                   {},
                   "At least one of 'min' or 'max' must not be None",
                   "no bounds"});
      return s;
    })
    .lowering(lowering::Lowering::of("Clamp", clamp_expr));

namespace {
[[maybe_unused]] const bool kInplaceRegistered =
    pointwise::register_inplace({"masked_fill", "lerp", "addcmul", "addcdiv", "clamp"});
}  // namespace

}  // namespace kiln
