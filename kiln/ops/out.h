#pragma once
// The out= forms of ops, with libtorch's spellings: add_out(out, a, b) and add_outf(a, b, out)
// compute add(a, b) into `out` and return it. `out` takes the result's shape (it is resized when
// its shape differs) and keeps its dtype, which the result must be castable to as PyTorch
// requires (no floating into integer, nothing but bool into bool). Out arguments do not take part
// in autograd: a result that requires grad is an error, as in libtorch.
#include <vector>

#include "kiln/ops/linalg.h"
#include "kiln/ops/pointwise.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"

namespace kiln {

namespace detail {
Tensor& write_out(const char* op, Tensor& out, const Tensor& result);
}

// name_out takes `out` first and keeps the op's default arguments; name_outf takes every
// argument, `out` last.
#define KILN_OUT_FORMS_WITH_DEFAULTS(name, defaulted, params, args)       \
  inline Tensor& name##_out(Tensor& out, KILN_UNPAREN defaulted) {        \
    return detail::write_out(#name "_out", out, name(KILN_UNPAREN args)); \
  }                                                                       \
  inline Tensor& name##_outf(KILN_UNPAREN params, Tensor& out) {          \
    return detail::write_out(#name "_out", out, name(KILN_UNPAREN args)); \
  }
#define KILN_OUT_FORMS(name, params, args) KILN_OUT_FORMS_WITH_DEFAULTS(name, params, params, args)
#define KILN_UNPAREN(...) __VA_ARGS__

#define KILN_UNARY_OUT(name) KILN_OUT_FORMS(name, (const Tensor& self), (self))
KILN_UNARY_METHOD_OPS(KILN_UNARY_OUT)
#undef KILN_UNARY_OUT

#define KILN_BINARY_OUT(name)                                                    \
  KILN_OUT_FORMS(name, (const Tensor& self, const Tensor& other), (self, other)) \
  KILN_OUT_FORMS(name, (const Tensor& self, const Scalar& other), (self, other))
KILN_BINARY_METHOD_OPS(KILN_BINARY_OUT)
#undef KILN_BINARY_OUT

KILN_OUT_FORMS_WITH_DEFAULTS(add,
                             (const Tensor& self, const Tensor& other, const Scalar& alpha = 1),
                             (const Tensor& self, const Tensor& other, const Scalar& alpha),
                             (self, other, alpha))
KILN_OUT_FORMS_WITH_DEFAULTS(sub,
                             (const Tensor& self, const Tensor& other, const Scalar& alpha = 1),
                             (const Tensor& self, const Tensor& other, const Scalar& alpha),
                             (self, other, alpha))
KILN_OUT_FORMS(mm, (const Tensor& self, const Tensor& mat2), (self, mat2))
KILN_OUT_FORMS(bmm, (const Tensor& self, const Tensor& mat2), (self, mat2))
KILN_OUT_FORMS(matmul, (const Tensor& self, const Tensor& other), (self, other))
KILN_OUT_FORMS_WITH_DEFAULTS(addmm,
                             (const Tensor& self, const Tensor& mat1, const Tensor& mat2,
                              const Scalar& beta = 1, const Scalar& alpha = 1),
                             (const Tensor& self, const Tensor& mat1, const Tensor& mat2,
                              const Scalar& beta, const Scalar& alpha),
                             (self, mat1, mat2, beta, alpha))
KILN_OUT_FORMS_WITH_DEFAULTS(cat, (const std::vector<Tensor>& tensors, int64_t dim = 0),
                             (const std::vector<Tensor>& tensors, int64_t dim), (tensors, dim))
KILN_OUT_FORMS_WITH_DEFAULTS(stack, (const std::vector<Tensor>& tensors, int64_t dim = 0),
                             (const std::vector<Tensor>& tensors, int64_t dim), (tensors, dim))
KILN_OUT_FORMS_WITH_DEFAULTS(sum,
                             (const Tensor& self, OptionalIntArrayRef dim, bool keepdim = false,
                              std::optional<ScalarType> dtype = std::nullopt),
                             (const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
                              std::optional<ScalarType> dtype),
                             (self, dim, keepdim, dtype))
KILN_OUT_FORMS_WITH_DEFAULTS(mean,
                             (const Tensor& self, OptionalIntArrayRef dim, bool keepdim = false,
                              std::optional<ScalarType> dtype = std::nullopt),
                             (const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
                              std::optional<ScalarType> dtype),
                             (self, dim, keepdim, dtype))
KILN_OUT_FORMS(where, (const Tensor& condition, const Tensor& self, const Tensor& other),
               (condition, self, other))

#undef KILN_UNPAREN
#undef KILN_OUT_FORMS
#undef KILN_OUT_FORMS_WITH_DEFAULTS

}  // namespace kiln
