#include "kiln/compile/codegen/c_types.h"

#include "kiln/core/error.h"

namespace kiln::compiler {

const char* compute_type(ScalarType t) {
  switch (t) {
    case kFloat64:
      return "double";
    case kFloat32:
    case kFloat16:
    case kBFloat16:
      return "float";
    case kInt64:
      return "int64_t";
    case kInt32:
      return "int32_t";
    case kInt16:
      return "int16_t";
    case kInt8:
      return "int8_t";
    case kUInt8:
      return "uint8_t";
    case kBool:
      return "bool";
    default:
      KILN_FAIL("compile: internal error: no C++ type for dtype ", t);
  }
}

std::string storage_type(ScalarType t) {
  if (t == kFloat16) return "kiln::Half";
  if (t == kBFloat16) return "kiln::BFloat16";
  return compute_type(t);
}

std::string convert(const std::string& x, ScalarType from, ScalarType to) {
  if (from == to) return x;
  if (is_16bit(to))
    return "static_cast<float>(" + storage_type(to) + "(static_cast<float>(" + x + ")))";
  if (std::string(compute_type(from)) == compute_type(to)) return x;
  return "static_cast<" + std::string(compute_type(to)) + ">(" + x + ")";
}

}  // namespace kiln::compiler
