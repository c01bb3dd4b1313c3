#pragma once
// ScalarType (the element type of a tensor), its properties and PyTorch's promotion rules.
#include <cstdint>
#include <ostream>
#include <string_view>

#include "kiln/core/half.h"

namespace kiln {

// Order matters: it indexes the promotion table in dtype.cpp.
enum class ScalarType : int8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Undefined,
  // Quantized integers (kiln/core/quantized.h): their tensors carry a scale and zero point and
  // reach no kernel; quantize_per_tensor makes them, dequantize and int_repr read them. After
  // Undefined, so that the promotion table and per-dtype arrays keep their ten entries.
  QInt8,
  QUInt8,
  QInt32,
  // c10's enumerator names (ScalarType::Float, ...), the same values.
  Byte = UInt8,
  Char = Int8,
  Short = Int16,
  Int = Int32,
  Long = Int64,
  Half = Float16,
  Float = Float32,
  Double = Float64,
};
using Dtype = ScalarType;
constexpr int kNumScalarTypes = static_cast<int>(ScalarType::Undefined);

constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kUInt8 = ScalarType::UInt8;
constexpr ScalarType kByte = ScalarType::UInt8;
constexpr ScalarType kInt8 = ScalarType::Int8;
constexpr ScalarType kChar = ScalarType::Int8;
constexpr ScalarType kInt16 = ScalarType::Int16;
constexpr ScalarType kShort = ScalarType::Int16;
constexpr ScalarType kInt32 = ScalarType::Int32;
constexpr ScalarType kInt = ScalarType::Int32;
constexpr ScalarType kInt64 = ScalarType::Int64;
constexpr ScalarType kLong = ScalarType::Int64;
constexpr ScalarType kFloat16 = ScalarType::Float16;
constexpr ScalarType kHalf = ScalarType::Float16;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kFloat32 = ScalarType::Float32;
constexpr ScalarType kFloat = ScalarType::Float32;
constexpr ScalarType kFloat64 = ScalarType::Float64;
constexpr ScalarType kDouble = ScalarType::Float64;
constexpr ScalarType kQInt8 = ScalarType::QInt8;
constexpr ScalarType kQUInt8 = ScalarType::QUInt8;
constexpr ScalarType kQInt32 = ScalarType::QInt32;

size_t element_size(ScalarType t);
std::string_view dtype_name(ScalarType t);  // "float32", "int64", ...
std::ostream& operator<<(std::ostream& os, ScalarType t);

constexpr bool is_floating_point(ScalarType t) {
  return t == kFloat16 || t == kBFloat16 || t == kFloat32 || t == kFloat64;
}
constexpr bool is_quantized(ScalarType t) { return t >= kQInt8 && t <= kQInt32; }
// The plain integer type a quantized type stores (qint8 -> int8, quint8 -> uint8, qint32 -> int32).
constexpr ScalarType underlying_int_type(ScalarType q) {
  return q == kQInt8 ? kInt8 : q == kQUInt8 ? kUInt8 : q == kQInt32 ? kInt32 : q;
}
constexpr bool is_integral(ScalarType t, bool include_bool = false) {
  return (t >= kUInt8 && t <= kInt64) || (include_bool && t == kBool);
}

// promote_types(int32, float16) == float16 and so on, as torch.promote_types.
ScalarType promote_types(ScalarType a, ScalarType b);

// The dtype floating-point factories use (float32 unless changed), as torch.get_default_dtype.
ScalarType get_default_dtype();
void set_default_dtype(ScalarType t);

template <class T>
struct CppTypeToScalarType;
#define KILN_FORALL_SCALAR_TYPES(_) \
  _(bool, Bool)                     \
  _(uint8_t, UInt8)                 \
  _(int8_t, Int8)                   \
  _(int16_t, Int16)                 \
  _(int32_t, Int32)                 \
  _(int64_t, Int64)                 \
  _(::kiln::Half, Float16)          \
  _(::kiln::BFloat16, BFloat16)     \
  _(float, Float32)                 \
  _(double, Float64)
#define KILN_DEFINE_CPP_TO_SCALAR(cpp, name) \
  template <>                                \
  struct CppTypeToScalarType<cpp> {          \
    static constexpr ScalarType value = ScalarType::name; \
  };
KILN_FORALL_SCALAR_TYPES(KILN_DEFINE_CPP_TO_SCALAR)
#undef KILN_DEFINE_CPP_TO_SCALAR
template <class T>
constexpr ScalarType dtype_of = CppTypeToScalarType<T>::value;

// Calls f(T{}) with the C++ type of `t` (a value of that type, for deduction only).
template <class F>
decltype(auto) visit_dtype(ScalarType t, F&& f) {
  switch (t) {
#define KILN_VISIT_CASE(cpp, name) \
  case ScalarType::name:           \
    return f(cpp{});
    KILN_FORALL_SCALAR_TYPES(KILN_VISIT_CASE)
#undef KILN_VISIT_CASE
    default:
      break;
  }
  return f(float{});  // unreachable for valid dtypes; callers validate first
}

}  // namespace kiln
