#include "kiln/distributed/reduce_op.h"

#include <algorithm>
#include <type_traits>

#include "kiln/core/error.h"
#include "kiln/core/half.h"

namespace kiln::distributed {
namespace {

template <class T>
using Wide = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

template <class T, class F>
ElementReduction loop(F f) {
  return [f](void* out, const void* a, const void* b, size_t n) {
    T* o = static_cast<T*>(out);
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    for (size_t i = 0; i < n; ++i)
      o[i] = static_cast<T>(f(static_cast<Wide<T>>(x[i]), static_cast<Wide<T>>(y[i])));
  };
}

template <class T>
ElementReduction reduction_of(ReduceOp op, ScalarType dtype, const char* what) {
  using W = Wide<T>;
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case ReduceOp::SUM:
      case ReduceOp::MAX:
      case ReduceOp::BOR:
        return loop<T>([](W x, W y) { return x || y; });
      case ReduceOp::PRODUCT:
      case ReduceOp::MIN:
      case ReduceOp::BAND:
        return loop<T>([](W x, W y) { return x && y; });
      case ReduceOp::BXOR:
        return loop<T>([](W x, W y) { return x != y; });
      case ReduceOp::AVG:
        break;
    }
  } else {
    switch (op) {
      case ReduceOp::SUM:
        return loop<T>([](W x, W y) { return x + y; });
      case ReduceOp::AVG:
        if constexpr (std::is_floating_point_v<W>) return loop<T>([](W x, W y) { return x + y; });
        break;
      case ReduceOp::PRODUCT:
        return loop<T>([](W x, W y) { return x * y; });
      // NaN wins, as in torch's min/max.
      case ReduceOp::MIN:
        return loop<T>([](W x, W y) { return x != x ? x : (y != y || y < x ? y : x); });
      case ReduceOp::MAX:
        return loop<T>([](W x, W y) { return x != x ? x : (y != y || y > x ? y : x); });
      case ReduceOp::BAND:
        if constexpr (std::is_integral_v<T>) return loop<T>([](W x, W y) { return x & y; });
        break;
      case ReduceOp::BOR:
        if constexpr (std::is_integral_v<T>) return loop<T>([](W x, W y) { return x | y; });
        break;
      case ReduceOp::BXOR:
        if constexpr (std::is_integral_v<T>) return loop<T>([](W x, W y) { return x ^ y; });
        break;
    }
  }
  KILN_FAIL(
      what, ": ReduceOp.", reduce_op_name(op), " is not defined for ", dtype,
      " tensors (AVG needs a floating-point dtype; BAND, BOR and BXOR an integer or bool one)");
}

}  // namespace

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
      return "SUM";
    case ReduceOp::AVG:
      return "AVG";
    case ReduceOp::PRODUCT:
      return "PRODUCT";
    case ReduceOp::MIN:
      return "MIN";
    case ReduceOp::MAX:
      return "MAX";
    case ReduceOp::BAND:
      return "BAND";
    case ReduceOp::BOR:
      return "BOR";
    case ReduceOp::BXOR:
      return "BXOR";
  }
  return "?";
}

ElementReduction element_reduction(ScalarType dtype, ReduceOp op, const char* what) {
  return visit_dtype(dtype, [&](auto tag) { return reduction_of<decltype(tag)>(op, dtype, what); });
}

}  // namespace kiln::distributed
