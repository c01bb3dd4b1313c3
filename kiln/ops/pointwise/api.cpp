// The C++ API of the pointwise family: free functions (kiln::exp, kiln::gelu, ...), the Tensor
// methods declared in tensor.h's pointwise section (x.exp(), x.add_(y), ...) and operators.
// Each is a call of a registry entry; Scalar arguments become wrapped-number tensors.
#include "kiln/ops/ops.h"
#include "kiln/ops/pointwise/util.h"

namespace kiln {
namespace {

using pointwise::call;

// The attributes an op of the method lists takes at their defaults (round's decimals, div's
// rounding mode); the rest take none.
const Attrs& default_attrs(const OpDef& op) {
  static const Attrs none, round_defaults{int64_t{0}}, div_defaults{std::monostate{}};
  if (op.name == "round" || op.name == "round_") return round_defaults;
  if (op.name == "div" || op.name == "div_") return div_defaults;
  return none;
}

Tensor& call_inplace(const OpDef& op, Tensor& self, std::vector<Tensor> rest, const Attrs& attrs) {
  rest.insert(rest.begin(), self);
  call(op, std::move(rest), attrs);
  return self;
}

AttrValue rounding_attr(const std::optional<std::string>& mode) {
  if (!mode) return std::monostate{};
  return *mode;
}

Tensor optional_tensor(const std::optional<Scalar>& s) { return s ? wrapped_scalar(*s) : Tensor(); }
Tensor optional_tensor(const std::optional<Tensor>& t) { return t ? *t : Tensor(); }

}  // namespace

// `static const OpDef& op = get_op(name)`: each function looks its entry up once.
#define KILN_OP(name) static const OpDef& op = get_op(name)

// ---- the unary and binary method lists (tensor.h) ----
#define KILN_DEFINE_UNARY(name)                                                 \
  Tensor name(const Tensor& self) {                                             \
    KILN_OP(#name);                                                             \
    return call(op, {self}, default_attrs(op));                                 \
  }                                                                             \
  Tensor Tensor::name() const { return kiln::name(*this); }                     \
  Tensor& Tensor::name##_() const {                                             \
    KILN_OP(#name "_");                                                         \
    return call_inplace(op, const_cast<Tensor&>(*this), {}, default_attrs(op)); \
  }
KILN_UNARY_METHOD_OPS(KILN_DEFINE_UNARY)
#undef KILN_DEFINE_UNARY

#define KILN_DEFINE_BINARY(name)                                                      \
  Tensor name(const Tensor& self, const Tensor& other) {                              \
    KILN_OP(#name);                                                                   \
    return call(op, {self, other}, default_attrs(op));                                \
  }                                                                                   \
  Tensor name(const Tensor& self, const Scalar& other) {                              \
    return name(self, wrapped_scalar(other));                                         \
  }                                                                                   \
  Tensor Tensor::name(const Tensor& other) const { return kiln::name(*this, other); } \
  Tensor Tensor::name(const Scalar& other) const { return kiln::name(*this, other); } \
  Tensor& Tensor::name##_(const Tensor& other) const {                                \
    KILN_OP(#name "_");                                                               \
    return call_inplace(op, const_cast<Tensor&>(*this), {other}, default_attrs(op));  \
  }                                                                                   \
  Tensor& Tensor::name##_(const Scalar& other) const { return name##_(wrapped_scalar(other)); }
KILN_BINARY_METHOD_OPS(KILN_DEFINE_BINARY)
#undef KILN_DEFINE_BINARY

// ---- arithmetic ----
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  KILN_OP("add");
  return call(op, {a, b}, {alpha});
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return add(a, wrapped_scalar(b), alpha);
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  KILN_OP("sub");
  return call(op, {a, b}, {alpha});
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return sub(a, wrapped_scalar(b), alpha);
}
Tensor rsub(const Tensor& a, const Scalar& b) { return sub(wrapped_scalar(b), a); }
Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const {
  return kiln::add(*this, o, alpha);
}
Tensor Tensor::add(const Scalar& o, const Scalar& alpha) const {
  return kiln::add(*this, o, alpha);
}
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const {
  return kiln::sub(*this, o, alpha);
}
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const {
  return kiln::sub(*this, o, alpha);
}
Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) const {
  KILN_OP("add_");
  return call_inplace(op, const_cast<Tensor&>(*this), {o}, {alpha});
}
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) const {
  return add_(wrapped_scalar(o), alpha);
}
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) const {
  KILN_OP("sub_");
  return call_inplace(op, const_cast<Tensor&>(*this), {o}, {alpha});
}
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) const {
  return sub_(wrapped_scalar(o), alpha);
}

Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string> mode) {
  KILN_OP("div");
  return call(op, {a, b}, {rounding_attr(mode)});
}
Tensor div(const Tensor& a, const Scalar& b, std::optional<std::string> mode) {
  return div(a, wrapped_scalar(b), std::move(mode));
}
Tensor floor_divide(const Tensor& a, const Tensor& b) { return div(a, b, std::string("floor")); }
Tensor floor_divide(const Tensor& a, const Scalar& b) { return div(a, b, std::string("floor")); }
Tensor Tensor::div(const Tensor& o, std::optional<std::string> mode) const {
  return kiln::div(*this, o, std::move(mode));
}
Tensor Tensor::div(const Scalar& o, std::optional<std::string> mode) const {
  return kiln::div(*this, o, std::move(mode));
}
Tensor& Tensor::div_(const Tensor& o, std::optional<std::string> mode) const {
  KILN_OP("div_");
  return call_inplace(op, const_cast<Tensor&>(*this), {o}, {rounding_attr(mode)});
}
Tensor& Tensor::div_(const Scalar& o, std::optional<std::string> mode) const {
  return div_(wrapped_scalar(o), std::move(mode));
}
Tensor Tensor::floor_divide(const Tensor& o) const { return kiln::floor_divide(*this, o); }
Tensor Tensor::floor_divide(const Scalar& o) const { return kiln::floor_divide(*this, o); }

Tensor pow(const Scalar& self, const Tensor& exponent) {
  return pow(wrapped_scalar(self), exponent);
}

Tensor round(const Tensor& self, int64_t decimals) {
  KILN_OP("round");
  return call(op, {self}, {decimals});
}
Tensor Tensor::round(int64_t decimals) const { return kiln::round(*this, decimals); }
Tensor& Tensor::round_(int64_t decimals) const {
  KILN_OP("round_");
  return call_inplace(op, const_cast<Tensor&>(*this), {}, {decimals});
}

// ---- clamping, selection, blends ----
Tensor clamp(const Tensor& self, const std::optional<Tensor>& min,
             const std::optional<Tensor>& max) {
  KILN_OP("clamp");
  return call(op, {self, optional_tensor(min), optional_tensor(max)});
}
Tensor clamp(const Tensor& self, const std::optional<Scalar>& min,
             const std::optional<Scalar>& max) {
  KILN_OP("clamp");
  return call(op, {self, optional_tensor(min), optional_tensor(max)});
}
Tensor clamp_min(const Tensor& self, const Scalar& min) { return clamp(self, min, std::nullopt); }
Tensor clamp_min(const Tensor& self, const Tensor& min) {
  return clamp(self, std::optional<Tensor>(min), std::nullopt);
}
Tensor clamp_max(const Tensor& self, const Scalar& max) { return clamp(self, std::nullopt, max); }
Tensor clamp_max(const Tensor& self, const Tensor& max) {
  return clamp(self, std::nullopt, std::optional<Tensor>(max));
}
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return kiln::clamp(*this, min, max);
}
Tensor Tensor::clamp(const std::optional<Tensor>& min, const std::optional<Tensor>& max) const {
  return kiln::clamp(*this, min, max);
}
Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) const {
  KILN_OP("clamp_");
  return call_inplace(op, const_cast<Tensor&>(*this), {optional_tensor(min), optional_tensor(max)},
                      {});
}
Tensor& Tensor::clamp_(const std::optional<Tensor>& min, const std::optional<Tensor>& max) const {
  KILN_OP("clamp_");
  return call_inplace(op, const_cast<Tensor&>(*this), {optional_tensor(min), optional_tensor(max)},
                      {});
}
Tensor Tensor::clamp_min(const Scalar& min) const { return kiln::clamp_min(*this, min); }
Tensor Tensor::clamp_max(const Scalar& max) const { return kiln::clamp_max(*this, max); }
Tensor Tensor::clamp_min(const Tensor& min) const { return kiln::clamp_min(*this, min); }
Tensor Tensor::clamp_max(const Tensor& max) const { return kiln::clamp_max(*this, max); }
Tensor& Tensor::clamp_min_(const Scalar& min) const { return clamp_(min, std::nullopt); }
Tensor& Tensor::clamp_max_(const Scalar& max) const { return clamp_(std::nullopt, max); }

Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight) {
  KILN_OP("lerp");
  return call(op, {self, end, weight});
}
Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight) {
  return lerp(self, end, wrapped_scalar(weight));
}
Tensor Tensor::lerp(const Tensor& end, const Scalar& weight) const {
  return kiln::lerp(*this, end, weight);
}
Tensor Tensor::lerp(const Tensor& end, const Tensor& weight) const {
  return kiln::lerp(*this, end, weight);
}
Tensor& Tensor::lerp_(const Tensor& end, const Tensor& weight) const {
  KILN_OP("lerp_");
  return call_inplace(op, const_cast<Tensor&>(*this), {end, weight}, {});
}
Tensor& Tensor::lerp_(const Tensor& end, const Scalar& weight) const {
  return lerp_(end, wrapped_scalar(weight));
}

Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  KILN_OP("addcmul");
  return call(op, {self, t1, t2}, {value});
}
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  KILN_OP("addcdiv");
  return call(op, {self, t1, t2}, {value});
}
Tensor Tensor::addcmul(const Tensor& t1, const Tensor& t2, const Scalar& value) const {
  return kiln::addcmul(*this, t1, t2, value);
}
Tensor Tensor::addcdiv(const Tensor& t1, const Tensor& t2, const Scalar& value) const {
  return kiln::addcdiv(*this, t1, t2, value);
}
Tensor& Tensor::addcmul_(const Tensor& t1, const Tensor& t2, const Scalar& value) const {
  KILN_OP("addcmul_");
  return call_inplace(op, const_cast<Tensor&>(*this), {t1, t2}, {value});
}
Tensor& Tensor::addcdiv_(const Tensor& t1, const Tensor& t2, const Scalar& value) const {
  KILN_OP("addcdiv_");
  return call_inplace(op, const_cast<Tensor&>(*this), {t1, t2}, {value});
}

Tensor where(const Tensor& cond, const Tensor& self, const Tensor& other) {
  KILN_OP("where");
  return call(op, {cond, self, other});
}
Tensor where(const Tensor& cond, const Scalar& self, const Tensor& other) {
  return where(cond, wrapped_scalar(self), other);
}
Tensor where(const Tensor& cond, const Tensor& self, const Scalar& other) {
  return where(cond, self, wrapped_scalar(other));
}
Tensor where(const Tensor& cond, const Scalar& self, const Scalar& other) {
  return where(cond, wrapped_scalar(self), wrapped_scalar(other));
}
Tensor Tensor::where(const Tensor& cond, const Tensor& other) const {
  return kiln::where(cond, *this, other);
}

Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value) {
  KILN_OP("masked_fill");
  return call(op, {self, mask, value});
}
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
  return masked_fill(self, mask, wrapped_scalar(value));
}
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const {
  return kiln::masked_fill(*this, mask, value);
}
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value) const {
  return kiln::masked_fill(*this, mask, value);
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Tensor& value) const {
  KILN_OP("masked_fill_");
  return call_inplace(op, const_cast<Tensor&>(*this), {mask, value}, {});
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) const {
  return masked_fill_(mask, wrapped_scalar(value));
}

// ---- special values ----
Tensor isnan(const Tensor& self) {
  KILN_OP("isnan");
  return call(op, {self});
}
Tensor isinf(const Tensor& self) {
  KILN_OP("isinf");
  return call(op, {self});
}
Tensor isfinite(const Tensor& self) {
  KILN_OP("isfinite");
  return call(op, {self});
}
Tensor Tensor::isnan() const { return kiln::isnan(*this); }
Tensor Tensor::isinf() const { return kiln::isinf(*this); }
Tensor Tensor::isfinite() const { return kiln::isfinite(*this); }

Tensor nan_to_num(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  KILN_OP("nan_to_num");
  return call(op, {self}, {opt_attr(nan), opt_attr(posinf), opt_attr(neginf)});
}
Tensor Tensor::nan_to_num(std::optional<double> nan, std::optional<double> posinf,
                          std::optional<double> neginf) const {
  return kiln::nan_to_num(*this, nan, posinf, neginf);
}
Tensor& Tensor::nan_to_num_(std::optional<double> nan, std::optional<double> posinf,
                            std::optional<double> neginf) const {
  KILN_OP("nan_to_num_");
  return call_inplace(op, const_cast<Tensor&>(*this), {},
                      {opt_attr(nan), opt_attr(posinf), opt_attr(neginf)});
}

// ---- activations ----
#define KILN_DEFINE_ACTIVATION(name) \
  Tensor name(const Tensor& self) {  \
    KILN_OP(#name);                  \
    return call(op, {self});         \
  }
KILN_DEFINE_ACTIVATION(logsigmoid)
KILN_DEFINE_ACTIVATION(relu6)
KILN_DEFINE_ACTIVATION(selu)
KILN_DEFINE_ACTIVATION(silu)
KILN_DEFINE_ACTIVATION(mish)
KILN_DEFINE_ACTIVATION(hardsigmoid)
KILN_DEFINE_ACTIVATION(hardswish)
#undef KILN_DEFINE_ACTIVATION
#define KILN_DEFINE_ACTIVATION_(name)      \
  Tensor& name##_(Tensor& self) {          \
    KILN_OP(#name "_");                    \
    return call_inplace(op, self, {}, {}); \
  }
KILN_DEFINE_ACTIVATION_(relu)
KILN_DEFINE_ACTIVATION_(selu)
KILN_DEFINE_ACTIVATION_(silu)
KILN_DEFINE_ACTIVATION_(mish)
KILN_DEFINE_ACTIVATION_(hardsigmoid)
KILN_DEFINE_ACTIVATION_(hardswish)
#undef KILN_DEFINE_ACTIVATION_

Tensor log_sigmoid(const Tensor& self) { return logsigmoid(self); }
Tensor leaky_relu(const Tensor& self, const Scalar& slope) {
  KILN_OP("leaky_relu");
  return call(op, {self}, {slope.to_double()});
}
Tensor& leaky_relu_(Tensor& self, const Scalar& slope) {
  KILN_OP("leaky_relu_");
  return call_inplace(op, self, {}, {slope.to_double()});
}
Tensor elu(const Tensor& self, const Scalar& alpha, const Scalar& scale,
           const Scalar& input_scale) {
  KILN_OP("elu");
  return call(op, {self}, {alpha.to_double(), scale.to_double(), input_scale.to_double()});
}
Tensor& elu_(Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  KILN_OP("elu_");
  return call_inplace(op, self, {},
                      {alpha.to_double(), scale.to_double(), input_scale.to_double()});
}
Tensor gelu(const Tensor& self, const std::string& approximate) {
  KILN_OP("gelu");
  return call(op, {self}, {approximate});
}
Tensor softplus(const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  KILN_OP("softplus");
  return call(op, {self}, {beta.to_double(), threshold.to_double()});
}
Tensor hardtanh(const Tensor& self, const Scalar& min_val, const Scalar& max_val) {
  KILN_OP("hardtanh");
  return call(op, {self}, {min_val.to_double(), max_val.to_double()});
}
Tensor& hardtanh_(Tensor& self, const Scalar& min_val, const Scalar& max_val) {
  KILN_OP("hardtanh_");
  return call_inplace(op, self, {}, {min_val.to_double(), max_val.to_double()});
}

// ---- operators with a number on the left ----
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Scalar& a, const Tensor& b) { return rsub(b, a); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Scalar& a, const Tensor& b) { return div(wrapped_scalar(a), b); }
Tensor operator%(const Scalar& a, const Tensor& b) { return remainder(wrapped_scalar(a), b); }
Tensor operator==(const Scalar& a, const Tensor& b) { return eq(b, a); }
Tensor operator!=(const Scalar& a, const Tensor& b) { return ne(b, a); }
Tensor operator<(const Scalar& a, const Tensor& b) { return gt(b, a); }
Tensor operator<=(const Scalar& a, const Tensor& b) { return ge(b, a); }
Tensor operator>(const Scalar& a, const Tensor& b) { return lt(b, a); }
Tensor operator>=(const Scalar& a, const Tensor& b) { return le(b, a); }
Tensor operator&(const Scalar& a, const Tensor& b) { return bitwise_and(b, a); }
Tensor operator|(const Scalar& a, const Tensor& b) { return bitwise_or(b, a); }
Tensor operator^(const Scalar& a, const Tensor& b) { return bitwise_xor(b, a); }

}  // namespace kiln
