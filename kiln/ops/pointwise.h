#pragma once
// Pointwise ops: arithmetic, math functions, activations, comparisons, logical and bitwise ops.
#include <optional>
#include <string>

#include "kiln/core/tensor.h"

namespace kiln {

#define KILN_DECLARE_UNARY_FN(name) Tensor name(const Tensor& self);
KILN_UNARY_METHOD_OPS(KILN_DECLARE_UNARY_FN)
#undef KILN_DECLARE_UNARY_FN
#define KILN_DECLARE_BINARY_FN(name)                    \
  Tensor name(const Tensor& self, const Tensor& other); \
  Tensor name(const Tensor& self, const Scalar& other);
KILN_BINARY_METHOD_OPS(KILN_DECLARE_BINARY_FN)
#undef KILN_DECLARE_BINARY_FN

Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
Tensor rsub(const Tensor& self, const Scalar& other);  // other - self

}  // namespace kiln
