#include "kiln/core/scalar.h"

#include "kiln/core/error.h"

namespace kiln {

void Scalar::throw_overflow(size_t int_bytes, bool is_signed) const {
  throw OverflowError(detail::str_cat("value ", *this, " cannot be converted to type ",
                                      is_signed ? "int" : "uint", int_bytes * 8,
                                      " without overflow"));
}

void Scalar::throw_overflow(ScalarType dtype) const {
  throw OverflowError(detail::str_cat("value ", *this, " cannot be converted to type ", dtype,
                                      " without overflow"));
}

}  // namespace kiln
