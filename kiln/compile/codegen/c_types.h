#pragma once
// How generated kernels (C++ for the CPU, CUDA C++ for NVRTC) spell dtypes and conversions,
// shared by every code generator so their arithmetic agrees with the eager kernels'.
#include <string>

#include "kiln/core/dtype.h"

namespace kiln::compiler {

inline bool is_16bit(ScalarType t) { return t == kFloat16 || t == kBFloat16; }
// The C++ type values of dtype t are computed in (16-bit floats in float).
const char* compute_type(ScalarType t);
// The C++ type elements of dtype t are stored as.
std::string storage_type(ScalarType t);
// x (a value computed as `from`) converted to dtype `to` as eager's casts convert: 16-bit floats
// round to their storage type.
std::string convert(const std::string& x, ScalarType from, ScalarType to);

}  // namespace kiln::compiler
