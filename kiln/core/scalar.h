#pragma once
// Scalar: a number passed to an op (add(x, 2), clamp(x, 0.0, 6.0)), as torch's Scalar.
#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <ostream>

#include "kiln/core/dtype.h"

namespace kiln {

class Scalar {
 public:
  enum class Kind : int8_t { Bool, Int, Float };
  Scalar() : Scalar(int64_t{0}) {}
  Scalar(bool b) : kind_(Kind::Bool), i_(b) {}  // NOLINT
  template <std::integral I>
  requires(!std::same_as<I, bool>) Scalar(I i)
      : kind_(Kind::Int), i_(static_cast<int64_t>(i)) {}  // NOLINT
  template <std::floating_point F>
  Scalar(F d) : kind_(Kind::Float), d_(static_cast<double>(d)) {}  // NOLINT
  Scalar(Half h) : Scalar(static_cast<float>(h)) {}                // NOLINT
  Scalar(BFloat16 h) : Scalar(static_cast<float>(h)) {}            // NOLINT

  Kind kind() const { return kind_; }
  bool is_floating_point() const { return kind_ == Kind::Float; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  double to_double() const { return kind_ == Kind::Float ? d_ : static_cast<double>(i_); }
  int64_t to_long() const { return kind_ == Kind::Float ? static_cast<int64_t>(d_) : i_; }
  // The value as T; a value T cannot hold is an OverflowError, as in c10's checked conversion
  // (which lets integers reach an unsigned type from as low as -max, wrapping).
  template <class T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) {
      return kind_ == Kind::Float ? d_ != 0 : i_ != 0;
    } else if constexpr (std::is_integral_v<T>) {
      using L = std::numeric_limits<T>;
      if (kind_ == Kind::Float) {
        // NaN fails both comparisons; max + 1 is a power of two, so exact in double.
        if (!(d_ >= static_cast<double>(L::lowest()) && d_ < static_cast<double>(L::max()) + 1.0))
          throw_overflow(sizeof(T), std::is_signed_v<T>);
        return static_cast<T>(d_);
      }
      if (!int_fits<T>(i_)) throw_overflow(sizeof(T), std::is_signed_v<T>);
      return static_cast<T>(i_);
    } else {
      const double d = to_double();
      if (std::isfinite(d) && std::abs(d) > max_finite<T>()) throw_overflow(dtype_of<T>);
      return static_cast<T>(static_cast<float>(d));
    }
  }
  // libtorch's spellings of the accessors above.
  double toDouble() const { return to_double(); }
  float toFloat() const { return static_cast<float>(to_double()); }
  int64_t toLong() const { return to_long(); }
  int toInt() const { return static_cast<int>(to_long()); }
  bool toBool() const { return to<bool>(); }
  Half toHalf() const { return to<Half>(); }
  BFloat16 toBFloat16() const { return to<BFloat16>(); }
  int8_t toChar() const { return to<int8_t>(); }
  uint8_t toByte() const { return to<uint8_t>(); }
  int16_t toShort() const { return to<int16_t>(); }
  bool isFloatingPoint() const { return is_floating_point(); }
  bool isIntegral(bool includeBool) const { return is_integral() || (includeBool && is_bool()); }
  bool isBoolean() const { return is_bool(); }
  bool isComplex() const { return false; }
  ScalarType type() const { return dtype(); }
  // The dtype a Python number of this kind has: bool, int64 or float64 (a "wrapped number").
  ScalarType dtype() const {
    return kind_ == Kind::Float ? kFloat64 : kind_ == Kind::Int ? kInt64 : kBool;
  }

 private:
  template <class T>
  static bool int_fits(int64_t v) {
    using L = std::numeric_limits<T>;
    if constexpr (std::is_signed_v<T>) {
      return v >= static_cast<int64_t>(L::lowest()) && v <= static_cast<int64_t>(L::max());
    } else if constexpr (sizeof(T) < sizeof(int64_t)) {
      return v >= -static_cast<int64_t>(L::max()) && v <= static_cast<int64_t>(L::max());
    } else {
      return true;  // uint64: negative values wrap, as in c10
    }
  }
  template <class T>
  static constexpr double max_finite() {
    if constexpr (std::is_same_v<T, Half>)
      return 65504.0;
    else if constexpr (std::is_same_v<T, BFloat16>)
      return 3.3895313892515355e38;
    else
      return static_cast<double>(std::numeric_limits<T>::max());
  }
  [[noreturn]] void throw_overflow(size_t int_bytes, bool is_signed) const;
  [[noreturn]] void throw_overflow(ScalarType dtype) const;

  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};
template <>
inline double Scalar::to<double>() const {
  return to_double();
}
std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace kiln
