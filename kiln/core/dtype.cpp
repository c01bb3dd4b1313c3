#include "kiln/core/dtype.h"

#include <atomic>

#include "kiln/core/error.h"

namespace kiln {

size_t element_size(ScalarType t) {
  static constexpr size_t sizes[] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
  KILN_CHECK(t != ScalarType::Undefined, "element_size: undefined dtype");
  if (is_quantized(t)) return element_size(underlying_int_type(t));
  return sizes[static_cast<int>(t)];
}

std::string_view dtype_name(ScalarType t) {
  static constexpr std::string_view names[] = {
      "bool",     "uint8",   "int8",    "int16",     "int32", "int64",  "float16",
      "bfloat16", "float32", "float64", "undefined", "qint8", "quint8", "qint32",
  };
  return names[static_cast<int>(t)];
}

std::ostream& operator<<(std::ostream& os, ScalarType t) { return os << dtype_name(t); }

ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == b) return a;
  if (a == ScalarType::Undefined) return b;
  if (b == ScalarType::Undefined) return a;
  KILN_CHECK(!is_quantized(a) && !is_quantized(b), "promote_types: ", a, " and ", b,
             ": quantized dtypes take part in no arithmetic; dequantize() first");
  // torch's table restricted to the types Kiln has: b1 u1 i1 i2 i4 i8 f2 bf f4 f8
  constexpr auto b1 = kBool, u1 = kUInt8, i1 = kInt8, i2 = kInt16, i4 = kInt32, i8 = kInt64,
                 f2 = kFloat16, bf = kBFloat16, f4 = kFloat32, f8 = kFloat64;
  static constexpr ScalarType table[10][10] = {
      /* b1 */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8},
      /* u1 */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i1 */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8},
      /* i2 */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8},
      /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8},
      /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
  };
  return table[static_cast<int>(a)][static_cast<int>(b)];
}

namespace {
std::atomic<ScalarType> g_default_dtype{kFloat32};
}
ScalarType get_default_dtype() { return g_default_dtype.load(std::memory_order_relaxed); }
void set_default_dtype(ScalarType t) {
  KILN_CHECK(is_floating_point(t), "set_default_dtype: expected a floating point dtype, got ", t);
  g_default_dtype.store(t);
}

}  // namespace kiln
