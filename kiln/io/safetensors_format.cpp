#include "kiln/io/safetensors_format.h"

namespace kiln::io::detail {
namespace {

constexpr ScalarType kDtypes[] = {kFloat64, kFloat32, kFloat16, kBFloat16, kInt64,
                                  kInt32,   kInt16,   kInt8,    kUInt8,    kBool};

}  // namespace

const char* safetensors_name_of(ScalarType dtype) {
  switch (dtype) {
    case kFloat64:
      return "F64";
    case kFloat32:
      return "F32";
    case kFloat16:
      return "F16";
    case kBFloat16:
      return "BF16";
    case kInt64:
      return "I64";
    case kInt32:
      return "I32";
    case kInt16:
      return "I16";
    case kInt8:
      return "I8";
    case kUInt8:
      return "U8";
    case kBool:
      return "BOOL";
    default:
      return nullptr;
  }
}

std::optional<ScalarType> dtype_from_safetensors_name(std::string_view name) {
  for (ScalarType t : kDtypes) {
    if (name == safetensors_name_of(t)) return t;
  }
  return std::nullopt;
}

}  // namespace kiln::io::detail
