#pragma once
// Scalar: a number passed to an op (add(x, 2), clamp(x, 0.0, 6.0)), as torch's Scalar.
#include <concepts>
#include <cstdint>
#include <ostream>

#include "kiln/core/dtype.h"

namespace kiln {

class Scalar {
 public:
  enum class Kind : int8_t { Bool, Int, Float };
  Scalar() : Scalar(int64_t{0}) {}
  Scalar(bool b) : kind_(Kind::Bool), i_(b) {}  // NOLINT
  template <std::integral I>
    requires(!std::same_as<I, bool>)
  Scalar(I i) : kind_(Kind::Int), i_(static_cast<int64_t>(i)) {}  // NOLINT
  template <std::floating_point F>
  Scalar(F d) : kind_(Kind::Float), d_(static_cast<double>(d)) {}  // NOLINT
  Scalar(Half h) : Scalar(static_cast<float>(h)) {}                 // NOLINT
  Scalar(BFloat16 h) : Scalar(static_cast<float>(h)) {}             // NOLINT

  Kind kind() const { return kind_; }
  bool is_floating_point() const { return kind_ == Kind::Float; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  double to_double() const { return kind_ == Kind::Float ? d_ : static_cast<double>(i_); }
  int64_t to_long() const { return kind_ == Kind::Float ? static_cast<int64_t>(d_) : i_; }
  template <class T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) return kind_ == Kind::Float ? d_ != 0 : i_ != 0;
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(to_long());
    else return static_cast<T>(static_cast<float>(to_double()));
  }
  // The dtype a Python number of this kind has: bool, int64 or float64 (a "wrapped number").
  ScalarType dtype() const {
    return kind_ == Kind::Float ? kFloat64 : kind_ == Kind::Int ? kInt64 : kBool;
  }

 private:
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
template <>
inline float Scalar::to<float>() const {
  return static_cast<float>(to_double());
}
std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace kiln
