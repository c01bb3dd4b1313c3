#pragma once
// Vector forms of the scalar functors (kiln/backend/scalar.h) whose std:: math calls the compiler
// cannot vectorise: VecForm<F>::apply(f, x...) computes F on kVec floats at once. cpu::pointwise
// uses the vector form when one exists and the operands are dense float, bfloat16 or half.
#include <concepts>

#include "kiln/backend/cpu/vec_math.h"
#include "kiln/backend/scalar.h"

namespace kiln::cpu {

template <class F>
struct VecForm {};  // no vector form

template <class F, class... V>
concept HasVecForm = requires(const F& f, V... x) {
  { VecForm<F>::apply(f, x...) } -> std::same_as<fvec>;
};

#define KILN_VEC_FORM_UNARY(Functor, expr)                               \
  template <>                                                            \
  struct VecForm<scalar::Functor> {                                      \
    static fvec apply(const scalar::Functor&, fvec x) { return (expr); } \
  };
KILN_VEC_FORM_UNARY(Exp, exp_vec(x))
KILN_VEC_FORM_UNARY(Expm1, expm1_vec(x))
KILN_VEC_FORM_UNARY(Log, log_vec(x))
KILN_VEC_FORM_UNARY(Tanh, tanh_vec(x))
KILN_VEC_FORM_UNARY(Sigmoid, sigmoid_vec(x))
KILN_VEC_FORM_UNARY(Silu, x* sigmoid_vec(x))
KILN_VEC_FORM_UNARY(Erf, erf_vec(x))
KILN_VEC_FORM_UNARY(Gelu, gelu_vec(x))
KILN_VEC_FORM_UNARY(GeluTanh, gelu_tanh_vec(x))
#undef KILN_VEC_FORM_UNARY

// Arithmetic. The compiler vectorises float32 (and float16) loops of these by itself; for
// bfloat16 the vector loop's paired conversions (load_pair / store_pair) are cheaper than the
// per-vector ones it generates, so only bfloat16 takes these forms (see kVectorised).
#define KILN_VEC_FORM_ARITHMETIC(Functor, op)                                    \
  template <>                                                                    \
  struct VecForm<scalar::Functor> {                                              \
    static constexpr bool kBFloat16Only = true;                                  \
    static fvec apply(const scalar::Functor&, fvec a, fvec b) { return a op b; } \
  };
KILN_VEC_FORM_ARITHMETIC(Add, +)
KILN_VEC_FORM_ARITHMETIC(Sub, -)
KILN_VEC_FORM_ARITHMETIC(Mul, *)
KILN_VEC_FORM_ARITHMETIC(Div, /)
#undef KILN_VEC_FORM_ARITHMETIC

template <class F>
constexpr bool kBFloat16Only = requires {
  requires VecForm<F>::kBFloat16Only;
};

template <>
struct VecForm<scalar::GeluBackward> {
  static fvec apply(const scalar::GeluBackward&, fvec grad, fvec x) {
    return grad * gelu_grad_vec(x);
  }
};
template <>
struct VecForm<scalar::GeluTanhBackward> {
  static fvec apply(const scalar::GeluTanhBackward&, fvec grad, fvec x) {
    return grad * gelu_tanh_grad_vec(x);
  }
};

}  // namespace kiln::cpu
