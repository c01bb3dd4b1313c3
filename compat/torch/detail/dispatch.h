#pragma once
// libtorch's AT_DISPATCH_* macros (ATen/Dispatch.h): run a lambda with `scalar_t` bound to the
// C++ type of a runtime dtype, for kernels written in user code:
//
//   AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "my_kernel", [&] {
//     const scalar_t* p = x.data_ptr<scalar_t>();
//     ...
//   });
//
// The lambda is pasted into one case per dtype, where `scalar_t` is that case's type. A dtype
// outside the list throws c10::NotImplementedError naming the kernel and the dtype. Kiln has no
// complex dtypes, so the _AND_COMPLEX forms are absent.
#include "kiln/core/dtype.h"
#include "torch/detail/c10_util.h"

namespace c10::detail {
template <::kiln::ScalarType S>
struct ScalarTypeToCpp;
#define KILN_SCALAR_TYPE_TO_CPP(cpp, name)           \
  template <>                                        \
  struct ScalarTypeToCpp<::kiln::ScalarType::name> { \
    using type = cpp;                                \
  };
KILN_FORALL_SCALAR_TYPES(KILN_SCALAR_TYPE_TO_CPP)
#undef KILN_SCALAR_TYPE_TO_CPP
template <::kiln::ScalarType S>
using cpp_type_t = typename ScalarTypeToCpp<S>::type;
}  // namespace c10::detail

#define AT_DISPATCH_CASE(enum_type, ...)                                    \
  case enum_type: {                                                         \
    using scalar_t [[maybe_unused]] = ::c10::detail::cpp_type_t<enum_type>; \
    return __VA_ARGS__();                                                   \
  }

#define AT_DISPATCH_SWITCH(TYPE, NAME, ...)                                             \
  [&] {                                                                                 \
    const ::kiln::ScalarType at_dispatch_type_ = (TYPE);                                \
    switch (at_dispatch_type_) {                                                        \
      __VA_ARGS__                                                                       \
      default:                                                                          \
        throw ::c10::NotImplementedError(                                               \
            ::c10::str('"', NAME, "\" not implemented for '", at_dispatch_type_, "'")); \
    }                                                                                   \
  }()

#define AT_DISPATCH_CASE_FLOATING_TYPES(...)      \
  AT_DISPATCH_CASE(::kiln::kFloat64, __VA_ARGS__) \
  AT_DISPATCH_CASE(::kiln::kFloat32, __VA_ARGS__)
#define AT_DISPATCH_CASE_INTEGRAL_TYPES(...)    \
  AT_DISPATCH_CASE(::kiln::kUInt8, __VA_ARGS__) \
  AT_DISPATCH_CASE(::kiln::kInt8, __VA_ARGS__)  \
  AT_DISPATCH_CASE(::kiln::kInt32, __VA_ARGS__) \
  AT_DISPATCH_CASE(::kiln::kInt64, __VA_ARGS__) \
  AT_DISPATCH_CASE(::kiln::kInt16, __VA_ARGS__)
#define AT_DISPATCH_CASE_ALL_TYPES(...) \
  AT_DISPATCH_CASE_INTEGRAL_TYPES(__VA_ARGS__) AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__)

#define AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND_HALF(TYPE, NAME, ...)      \
  AT_DISPATCH_SWITCH(TYPE, NAME,                                  \
                     AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__) \
                         AT_DISPATCH_CASE(::kiln::kFloat16, __VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND(SCALARTYPE, TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME,                                    \
                     AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__)   \
                         AT_DISPATCH_CASE(SCALARTYPE, __VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND2(SCALARTYPE1, SCALARTYPE2, TYPE, NAME, ...)  \
  AT_DISPATCH_SWITCH(TYPE, NAME,                                                    \
                     AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__) AT_DISPATCH_CASE( \
                         SCALARTYPE1, __VA_ARGS__) AT_DISPATCH_CASE(SCALARTYPE2, __VA_ARGS__))
#define AT_DISPATCH_INTEGRAL_TYPES(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_INTEGRAL_TYPES(__VA_ARGS__))
#define AT_DISPATCH_INTEGRAL_TYPES_AND(SCALARTYPE, TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME,                                    \
                     AT_DISPATCH_CASE_INTEGRAL_TYPES(__VA_ARGS__)   \
                         AT_DISPATCH_CASE(SCALARTYPE, __VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_ALL_TYPES(__VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES_AND(SCALARTYPE, TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME,                               \
                     AT_DISPATCH_CASE_ALL_TYPES(__VA_ARGS__)   \
                         AT_DISPATCH_CASE(SCALARTYPE, __VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES_AND2(SCALARTYPE1, SCALARTYPE2, TYPE, NAME, ...)  \
  AT_DISPATCH_SWITCH(TYPE, NAME,                                               \
                     AT_DISPATCH_CASE_ALL_TYPES(__VA_ARGS__) AT_DISPATCH_CASE( \
                         SCALARTYPE1, __VA_ARGS__) AT_DISPATCH_CASE(SCALARTYPE2, __VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES_AND3(SCALARTYPE1, SCALARTYPE2, SCALARTYPE3, TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(                                                                      \
      TYPE, NAME,                                                                          \
      AT_DISPATCH_CASE_ALL_TYPES(__VA_ARGS__) AT_DISPATCH_CASE(SCALARTYPE1, __VA_ARGS__)   \
          AT_DISPATCH_CASE(SCALARTYPE2, __VA_ARGS__) AT_DISPATCH_CASE(SCALARTYPE3, __VA_ARGS__))
