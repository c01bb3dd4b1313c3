#pragma once
// Pointwise math, written once. These functors compile for the host, for CUDA device code and
// for NVRTC, and the compiler's generated code calls the same ones: one definition, no drift.
// T is a compute type (float, double, an integer type or bool); Half/BFloat16 are computed in
// float. Ops that only make sense for floating types (exp, sin, ...) are only instantiated with
// float and double. Functors with parameters (leaky_relu's slope, ...) hold them as doubles.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kiln/core/half.h"

namespace kiln::scalar {

namespace detail {
template <class T>
constexpr bool is_float = std::is_floating_point_v<T>;
template <class T>
constexpr bool is_signed_int = (std::is_integral_v<T> && std::is_signed_v<T>);

template <class T>
KILN_HD bool isnan(T a) {
  if constexpr (is_float<T>)
    return a != a;
  else
    return false;
}
// -a without signed overflow: INT_MIN wraps to itself, as two's complement hardware does.
template <class T>
KILN_HD T wrapping_neg(T a) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(0) - static_cast<U>(a));
}
// C++ integer division truncates toward zero; x / 0 is reported by the kernel before the loop
// runs (it would trap), and x / -1 is a negation (INT_MIN / -1 would trap too).
template <class T>
KILN_HD T int_div_trunc(T a, T b) {
  if (b == 0) return 0;
  if constexpr (is_signed_int<T>) {
    if (b == T(-1)) return wrapping_neg(a);
  }
  return static_cast<T>(a / b);
}
template <class T>
KILN_HD T int_mod_trunc(T a, T b) {
  if (b == 0) return 0;
  if constexpr (is_signed_int<T>) {
    if (b == T(-1)) return 0;
  }
  return static_cast<T>(a % b);
}
}  // namespace detail

// Functors whose body is one expression of `a` (and `b`). T is the compute type.
#define KILN_SCALAR_UNARY(Name, expr) \
  struct Name {                       \
    template <class T>                \
    KILN_HD T operator()(T a) const { \
      return expr;                    \
    }                                 \
  };
#define KILN_SCALAR_BINARY(Name, expr)     \
  struct Name {                            \
    template <class T>                     \
    KILN_HD T operator()(T a, T b) const { \
      return expr;                         \
    }                                      \
  };
#define KILN_SCALAR_PREDICATE(Name, expr)     \
  struct Name {                               \
    template <class T>                        \
    KILN_HD bool operator()(T a, T b) const { \
      return expr;                            \
    }                                         \
  };
#define KILN_SCALAR_UNARY_PREDICATE(Name, expr) \
  struct Name {                                 \
    template <class T>                          \
    KILN_HD bool operator()(T a) const {        \
      return expr;                              \
    }                                           \
  };

// ---- arithmetic ----
struct Add {
  template <class T>
  KILN_HD T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>)
      return a || b;
    else
      return a + b;
  }
};
KILN_SCALAR_BINARY(Sub, a - b)
struct Mul {
  template <class T>
  KILN_HD T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>)
      return a && b;
    else
      return a * b;
  }
};
// True division (floating types only: integer inputs are promoted first).
KILN_SCALAR_BINARY(Div, a / b)
struct DivTrunc {
  template <class T>
  KILN_HD T operator()(T a, T b) const {
    if constexpr (detail::is_float<T>)
      return std::trunc(a / b);
    else
      return detail::int_div_trunc(a, b);
  }
};
// Python's floor division: the quotient rounded toward negative infinity.
struct DivFloor {
  template <class T>
  KILN_HD T operator()(T a, T b) const {
    if constexpr (detail::is_float<T>) {
      if (b == 0) return a / b;
      // Computed from fmod so that the result is exact when a / b rounds across an integer.
      T mod = std::fmod(a, b);
      T div = (a - mod) / b;
      if (mod != 0 && ((b < 0) != (mod < 0))) div -= T(1);
      if (div == 0) return std::copysign(T(0), a / b);
      T floordiv = std::floor(div);
      if (div - floordiv > T(0.5)) floordiv += T(1);
      return floordiv;
    } else {
      T q = detail::int_div_trunc(a, b);
      if constexpr (detail::is_signed_int<T>) {
        if (b != 0 && detail::int_mod_trunc(a, b) != 0 && ((a < 0) != (b < 0))) q -= 1;
      }
      return q;
    }
  }
};
// C's fmod: the remainder has the sign of the dividend.
struct Fmod {
  template <class T>
  KILN_HD T operator()(T a, T b) const {
    if constexpr (detail::is_float<T>)
      return std::fmod(a, b);
    else
      return detail::int_mod_trunc(a, b);
  }
};
// Python's %: the remainder has the sign of the divisor.
struct Remainder {
  template <class T>
  KILN_HD T operator()(T a, T b) const {
    T r;
    if constexpr (detail::is_float<T>)
      r = std::fmod(a, b);
    else
      r = detail::int_mod_trunc(a, b);
    if constexpr (std::is_signed_v<T>) {
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
    }
    return r;
  }
};
struct Neg {
  template <class T>
  KILN_HD T operator()(T a) const {
    if constexpr (detail::is_signed_int<T>)
      return detail::wrapping_neg(a);
    else
      return -a;
  }
};
struct Abs {
  template <class T>
  KILN_HD T operator()(T a) const {
    if constexpr (detail::is_float<T>)
      return std::abs(a);
    else if constexpr (detail::is_signed_int<T>)
      return a < 0 ? detail::wrapping_neg(a) : a;
    else
      return a;
  }
};
// -1, 0 or 1 (0 for NaN and for both zeros).
struct Sign {
  template <class T>
  KILN_HD T operator()(T a) const {
    if constexpr (std::is_unsigned_v<T>)
      return static_cast<T>(a > T(0));
    else
      return static_cast<T>((T(0) < a) - (a < T(0)));
  }
};
struct Square {
  template <class T>
  KILN_HD T operator()(T a) const {
    if constexpr (std::is_same_v<T, bool>)
      return a;
    else
      return static_cast<T>(a * a);
  }
};
KILN_SCALAR_UNARY(Reciprocal, T(1) / a)
// a ** b. Integers: exact by repeated squaring; a negative exponent gives 1 / a truncated
// (so 0 unless a is 1 or -1).
struct Pow {
  template <class T>
  KILN_HD T operator()(T a, T b) const {
    if constexpr (detail::is_float<T>) {
      return std::pow(a, b);
    } else {
      if constexpr (detail::is_signed_int<T>) {
        if (b < 0) {
          if (a == 1) return 1;
          if (a == -1) return (b & 1) ? T(-1) : T(1);
          return 0;
        }
      }
      using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
      W result = 1, base = a;
      for (W e = b; e > 0; e >>= 1) {
        if (e & 1)
          result = static_cast<W>(static_cast<uint64_t>(result) * static_cast<uint64_t>(base));
        base = static_cast<W>(static_cast<uint64_t>(base) * static_cast<uint64_t>(base));
      }
      return static_cast<T>(result);
    }
  }
};
// NaN-propagating maximum and minimum.
struct Maximum {
  template <class T>
  KILN_HD T operator()(T a, T b) const {
    if (detail::isnan(a)) return a;
    if (detail::isnan(b)) return b;
    return a > b ? a : b;
  }
};
struct Minimum {
  template <class T>
  KILN_HD T operator()(T a, T b) const {
    if (detail::isnan(a)) return a;
    if (detail::isnan(b)) return b;
    return a < b ? a : b;
  }
};

// ---- exponentials, logarithms, powers ----
KILN_SCALAR_UNARY(Exp, std::exp(a))
KILN_SCALAR_UNARY(Exp2, std::exp2(a))
KILN_SCALAR_UNARY(Expm1, std::expm1(a))
KILN_SCALAR_UNARY(Log, std::log(a))
KILN_SCALAR_UNARY(Log2, std::log2(a))
KILN_SCALAR_UNARY(Log10, std::log10(a))
KILN_SCALAR_UNARY(Log1p, std::log1p(a))
KILN_SCALAR_UNARY(Sqrt, std::sqrt(a))
KILN_SCALAR_UNARY(Rsqrt, T(1) / std::sqrt(a))

// ---- trigonometric and hyperbolic ----
KILN_SCALAR_UNARY(Sin, std::sin(a))
KILN_SCALAR_UNARY(Cos, std::cos(a))
KILN_SCALAR_UNARY(Tan, std::tan(a))
KILN_SCALAR_UNARY(Asin, std::asin(a))
KILN_SCALAR_UNARY(Acos, std::acos(a))
KILN_SCALAR_UNARY(Atan, std::atan(a))
KILN_SCALAR_BINARY(Atan2, std::atan2(a, b))
KILN_SCALAR_UNARY(Sinh, std::sinh(a))
KILN_SCALAR_UNARY(Cosh, std::cosh(a))
KILN_SCALAR_UNARY(Tanh, std::tanh(a))

// ---- error function ----
KILN_SCALAR_UNARY(Erf, std::erf(a))
KILN_SCALAR_UNARY(Erfc, std::erfc(a))
// Inverse of erf on (-1, 1): Winitzki's closed-form estimate (relative error below 2e-3),
// refined by Halley steps on erf(x) - y, each of which triples the number of correct digits.
struct Erfinv {
  template <class T>
  KILN_HD T operator()(T y) const {
    if (!(y > T(-1) && y < T(1))) {
      if (y == T(1)) return std::numeric_limits<T>::infinity();
      if (y == T(-1)) return -std::numeric_limits<T>::infinity();
      return std::numeric_limits<T>::quiet_NaN();
    }
    const T kA = T(0.147);
    const T kPi = T(3.14159265358979323846);
    const T ln = std::log((T(1) - y) * (T(1) + y));
    const T first = T(2) / (kPi * kA) + ln / T(2);
    T x = std::copysign(std::sqrt(std::sqrt(first * first - ln / kA) - first), y);
    const T kTwoOverSqrtPi = T(1.12837916709551257390);
    for (int step = 0; step < 2; ++step) {
      const T f = std::erf(x) - y;
      const T df = kTwoOverSqrtPi * std::exp(-x * x);
      x -= f / (df + x * f);  // Halley: f'' = -2x f'
    }
    return x;
  }
};

// ---- rounding (identity on integers) ----
struct Floor {
  template <class T>
  KILN_HD T operator()(T a) const {
    if constexpr (detail::is_float<T>)
      return std::floor(a);
    else
      return a;
  }
};
struct Ceil {
  template <class T>
  KILN_HD T operator()(T a) const {
    if constexpr (detail::is_float<T>)
      return std::ceil(a);
    else
      return a;
  }
};
struct Trunc {
  template <class T>
  KILN_HD T operator()(T a) const {
    if constexpr (detail::is_float<T>)
      return std::trunc(a);
    else
      return a;
  }
};
// Round half to even (the default floating-point rounding mode), as PyTorch.
struct Round {
  template <class T>
  KILN_HD T operator()(T a) const {
    if constexpr (detail::is_float<T>)
      return std::nearbyint(a);
    else
      return a;
  }
};
// Round to `decimals` decimal places (negative: to tens, hundreds, ...), half to even.
struct RoundDecimals {
  double scale;  // 10 ** |decimals|
  bool negative;
  KILN_HD RoundDecimals(int64_t decimals)
      : scale(std::pow(10.0, static_cast<double>(decimals < 0 ? -decimals : decimals))),
        negative(decimals < 0) {}
  template <class T>
  KILN_HD T operator()(T a) const {
    const T s = static_cast<T>(scale);
    return negative ? std::nearbyint(a / s) * s : std::nearbyint(a * s) / s;
  }
};
KILN_SCALAR_UNARY(Frac, a - std::trunc(a))

// ---- activations ----
KILN_SCALAR_UNARY(Sigmoid, T(1) / (T(1) + std::exp(-a)))
// log(sigmoid(a)) = min(a, 0) - log1p(exp(-|a|)), which neither overflows nor underflows.
struct LogSigmoid {
  template <class T>
  KILN_HD T operator()(T a) const {
    const T lo = a < T(0) ? a : T(0);
    return lo - std::log1p(std::exp(-std::abs(a)));
  }
};
// max(a, 0) that keeps NaN.
struct Relu {
  template <class T>
  KILN_HD T operator()(T a) const {
    if constexpr (std::is_unsigned_v<T>)
      return a;
    else
      return a < T(0) ? T(0) : a;
  }
};
// The gradient of relu-like ops: grad where x > threshold, else 0.
struct ThresholdBackward {
  double threshold;
  template <class T>
  KILN_HD T operator()(T grad, T x) const {
    return x > static_cast<T>(threshold) ? grad : T(0);
  }
};
struct Hardtanh {
  double min_val, max_val;
  template <class T>
  KILN_HD T operator()(T a) const {
    const T lo = static_cast<T>(min_val), hi = static_cast<T>(max_val);
    return a < lo ? lo : (a > hi ? hi : a);
  }
};
struct LeakyRelu {
  double negative_slope;
  template <class T>
  KILN_HD T operator()(T a) const {
    return a > T(0) ? a : a * static_cast<T>(negative_slope);
  }
};
// scale * (a > 0 ? a : alpha * (exp(a * input_scale) - 1)); selu is elu with fixed constants.
struct Elu {
  double alpha, scale, input_scale;
  template <class T>
  KILN_HD T operator()(T a) const {
    const T s = static_cast<T>(scale);
    if (a > T(0)) return a * s;
    return std::expm1(a * static_cast<T>(input_scale)) * static_cast<T>(alpha) * s;
  }
};
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;
// a * Phi(a), Phi the standard normal CDF.
struct Gelu {
  template <class T>
  KILN_HD T operator()(T a) const {
    const T kSqrtHalf = T(0.70710678118654752440);
    return T(0.5) * a * (T(1) + std::erf(a * kSqrtHalf));
  }
};
// The tanh approximation of gelu.
struct GeluTanh {
  template <class T>
  KILN_HD T operator()(T a) const {
    const T kBeta = T(0.79788456080286535588);  // sqrt(2 / pi)
    const T kKappa = T(0.044715);
    const T inner = kBeta * (a + kKappa * a * a * a);
    return T(0.5) * a * (T(1) + std::tanh(inner));
  }
};
// grad * d gelu(x) / dx = grad * (Phi(x) + x phi(x)).
struct GeluBackward {
  template <class T>
  KILN_HD T operator()(T grad, T x) const {
    const T kSqrtHalf = T(0.70710678118654752440);
    const T kInvSqrt2Pi = T(0.39894228040143267794);
    const T cdf = T(0.5) * (T(1) + std::erf(x * kSqrtHalf));
    return grad * (cdf + x * kInvSqrt2Pi * std::exp(T(-0.5) * x * x));
  }
};
// grad * d gelu_tanh(x) / dx, from gelu_tanh(x) = x s with s = sigmoid(2 inner(x)).
struct GeluTanhBackward {
  template <class T>
  KILN_HD T operator()(T grad, T x) const {
    const T kBeta = T(0.79788456080286535588);
    const T kKappa = T(0.044715);
    const T s = T(1) / (T(1) + std::exp(T(-2) * kBeta * (x + kKappa * x * x * x)));
    return grad * (s + x * s * (T(1) - s) * T(2) * kBeta * (T(1) + T(3) * kKappa * x * x));
  }
};
KILN_SCALAR_UNARY(Silu, a / (T(1) + std::exp(-a)))
// log(1 + exp(beta * a)) / beta, and a itself above the threshold (where they agree to
// float precision and exp would overflow).
struct Softplus {
  double beta, threshold;
  template <class T>
  KILN_HD T operator()(T a) const {
    const T b = static_cast<T>(beta);
    const T x = a * b;
    return x > static_cast<T>(threshold) ? a : std::log1p(std::exp(x)) / b;
  }
};
KILN_SCALAR_UNARY(Mish, std::tanh(Softplus{1, 20}(a)) * a)
struct Hardsigmoid {
  template <class T>
  KILN_HD T operator()(T a) const {
    const T x = a + T(3);
    return (x < T(0) ? T(0) : (x > T(6) ? T(6) : x)) / T(6);
  }
};
struct Hardswish {
  template <class T>
  KILN_HD T operator()(T a) const {
    const T h = Hardsigmoid{}(a);
    return a * h;
  }
};

// ---- comparisons and logic (results are bool) ----
KILN_SCALAR_PREDICATE(Eq, a == b)
KILN_SCALAR_PREDICATE(Ne, a != b)
KILN_SCALAR_PREDICATE(Lt, a < b)
KILN_SCALAR_PREDICATE(Le, a <= b)
KILN_SCALAR_PREDICATE(Gt, a > b)
KILN_SCALAR_PREDICATE(Ge, a >= b)
// Truthiness: nonzero (NaN included) is true.
KILN_SCALAR_PREDICATE(LogicalAnd, a != T(0) && b != T(0))
KILN_SCALAR_PREDICATE(LogicalOr, a != T(0) || b != T(0))
KILN_SCALAR_PREDICATE(LogicalXor, (a != T(0)) != (b != T(0)))
KILN_SCALAR_UNARY_PREDICATE(LogicalNot, a == T(0))
KILN_SCALAR_UNARY_PREDICATE(IsNan, detail::isnan(a))
struct IsInf {
  template <class T>
  KILN_HD bool operator()(T a) const {
    if constexpr (detail::is_float<T>)
      return std::isinf(a);
    else
      return false;
  }
};
struct IsFinite {
  template <class T>
  KILN_HD bool operator()(T a) const {
    if constexpr (detail::is_float<T>)
      return std::isfinite(a);
    else
      return true;
  }
};

// ---- bitwise (integers and bool) ----
struct BitwiseAnd {
  template <class T>
  KILN_HD T operator()(T a, T b) const {
    return static_cast<T>(a & b);
  }
};
KILN_SCALAR_BINARY(BitwiseOr, static_cast<T>(a | b))
KILN_SCALAR_BINARY(BitwiseXor, static_cast<T>(a ^ b))
struct BitwiseNot {
  template <class T>
  KILN_HD T operator()(T a) const {
    if constexpr (std::is_same_v<T, bool>)
      return !a;
    else
      return static_cast<T>(~a);
  }
};

// ---- selection and blends ----
// NaN becomes `nan`, +inf `posinf`, -inf `neginf` (the caller fills in the dtype's extremes).
struct NanToNum {
  double nan, posinf, neginf;
  template <class T>
  KILN_HD T operator()(T a) const {
    if constexpr (detail::is_float<T>) {
      if (a != a) return static_cast<T>(nan);
      if (a == std::numeric_limits<T>::infinity()) return static_cast<T>(posinf);
      if (a == -std::numeric_limits<T>::infinity()) return static_cast<T>(neginf);
    }
    return a;
  }
};
struct Where {
  template <class T>
  KILN_HD T operator()(bool cond, T a, T b) const {
    return cond ? a : b;
  }
};
// min(max(a, lo), hi), keeping NaN in a.
struct Clamp {
  template <class T>
  KILN_HD T operator()(T a, T lo, T hi) const {
    if (detail::isnan(a)) return a;
    const T l = a < lo ? lo : a;
    return l > hi ? hi : l;
  }
};
struct ClampMin {
  template <class T>
  KILN_HD T operator()(T a, T lo) const {
    return a < lo ? lo : a;
  }
};
struct ClampMax {
  template <class T>
  KILN_HD T operator()(T a, T hi) const {
    return a > hi ? hi : a;
  }
};
// a + w * (b - a), written from the nearer end so that w = 1 gives exactly b.
struct Lerp {
  template <class T>
  KILN_HD T operator()(T a, T b, T w) const {
    const T diff = b - a;
    return std::abs(w) < T(0.5) ? a + w * diff : b - diff * (T(1) - w);
  }
};
struct Addcmul {
  double value;
  template <class T>
  KILN_HD T operator()(T a, T b, T c) const {
    if constexpr (std::is_same_v<T, bool>)
      return a || (value != 0 && b && c);
    else
      return static_cast<T>(a + static_cast<T>(value) * b * c);
  }
};
struct Addcdiv {
  double value;
  template <class T>
  KILN_HD T operator()(T a, T b, T c) const {
    return a + static_cast<T>(value) * b / c;
  }
};

#undef KILN_SCALAR_UNARY
#undef KILN_SCALAR_BINARY
#undef KILN_SCALAR_PREDICATE
#undef KILN_SCALAR_UNARY_PREDICATE

}  // namespace kiln::scalar
