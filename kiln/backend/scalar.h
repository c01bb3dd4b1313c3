#pragma once
// Pointwise math, written once. These functors compile for the host, for CUDA device code and
// for NVRTC, and the compiler's generated code calls the same ones: one definition, no drift.
// T is a compute type (float, double or an integer type); Half/BFloat16 are computed in float.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kiln/core/half.h"

namespace kiln::scalar {

struct Add {
  template <class T>
  KILN_HD T operator()(T a, T b) const { return a + b; }
};
struct Sub {
  template <class T>
  KILN_HD T operator()(T a, T b) const { return a - b; }
};
struct Mul {
  template <class T>
  KILN_HD T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a && b;
    else return a * b;
  }
};
struct Neg {
  template <class T>
  KILN_HD T operator()(T a) const { return -a; }
};
struct Exp {
  template <class T>
  KILN_HD T operator()(T a) const { return std::exp(a); }
};

}  // namespace kiln::scalar
