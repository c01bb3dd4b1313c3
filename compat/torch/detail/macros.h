#pragma once
// libtorch's checking and warning macros (c10/util/Exception.h, c10/util/Logging.h). A failed
// check throws c10::Error (kiln::Error, a std::exception) whose what() is the message parts
// streamed together, or a typed subclass (TORCH_CHECK_INDEX: c10::IndexError, ...).
// Unlike libtorch, TORCH_CHECK_EQ and its siblings throw c10::Error instead of aborting.
#include "torch/detail/c10_util.h"

#define C10_THROW_ERROR(err_type, msg) throw ::c10::err_type(msg)

#define TORCH_CHECK_WITH(error_t, cond, ...)                                            \
  do {                                                                                  \
    if (!(cond)) [[unlikely]]                                                           \
      throw error_t(::c10::detail::check_message(                                       \
          "Expected " #cond " to be true, but got false." __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)

#define TORCH_CHECK(cond, ...) TORCH_CHECK_WITH(::kiln::Error, cond, __VA_ARGS__)
#define TORCH_CHECK_INDEX(cond, ...) TORCH_CHECK_WITH(::c10::IndexError, cond, __VA_ARGS__)
#define TORCH_CHECK_VALUE(cond, ...) TORCH_CHECK_WITH(::kiln::ValueError, cond, __VA_ARGS__)
#define TORCH_CHECK_TYPE(cond, ...) TORCH_CHECK_WITH(::c10::TypeError, cond, __VA_ARGS__)
#define TORCH_CHECK_NOT_IMPLEMENTED(cond, ...) \
  TORCH_CHECK_WITH(::c10::NotImplementedError, cond, __VA_ARGS__)
#define TORCH_CHECK_ARG(cond, argN, ...) \
  TORCH_CHECK(cond, "invalid argument ", argN, ": " __VA_OPT__(, ) __VA_ARGS__)

// TORCH_CHECK_EQ(a, b): "Check failed: a == b (1 vs. 2) ".
#define TORCH_CHECK_OP(val1, val2, op)                                                      \
  do {                                                                                      \
    const auto& torch_check_op_a_ = (val1);                                                 \
    const auto& torch_check_op_b_ = (val2);                                                 \
    if (!(torch_check_op_a_ op torch_check_op_b_)) [[unlikely]]                             \
      throw ::kiln::Error(::c10::str("Check failed: " #val1 " " #op " " #val2 " (",         \
                                     torch_check_op_a_, " vs. ", torch_check_op_b_, ") ")); \
  } while (0)
#define TORCH_CHECK_EQ(val1, val2) TORCH_CHECK_OP(val1, val2, ==)
#define TORCH_CHECK_NE(val1, val2) TORCH_CHECK_OP(val1, val2, !=)
#define TORCH_CHECK_LE(val1, val2) TORCH_CHECK_OP(val1, val2, <=)
#define TORCH_CHECK_LT(val1, val2) TORCH_CHECK_OP(val1, val2, <)
#define TORCH_CHECK_GE(val1, val2) TORCH_CHECK_OP(val1, val2, >=)
#define TORCH_CHECK_GT(val1, val2) TORCH_CHECK_OP(val1, val2, >)

// An internal invariant: the message says where it failed.
#define TORCH_INTERNAL_ASSERT(cond, ...)                                               \
  do {                                                                                 \
    if (!(cond)) [[unlikely]]                                                          \
      throw ::kiln::Error(                                                             \
          ::c10::str(#cond " INTERNAL ASSERT FAILED at \"", __FILE__, "\":", __LINE__, \
                     ", please report a bug to Kiln. ",                                \
                     ::c10::detail::check_message("" __VA_OPT__(, ) __VA_ARGS__)));    \
  } while (0)
#ifdef NDEBUG
#define TORCH_INTERNAL_ASSERT_DEBUG_ONLY(cond, ...) \
  do {                                              \
  } while (false && (cond))
#else
#define TORCH_INTERNAL_ASSERT_DEBUG_ONLY(cond, ...) TORCH_INTERNAL_ASSERT(cond, __VA_ARGS__)
#endif

// Deprecated in libtorch, still common in older programs.
#define AT_ASSERT(cond, ...) TORCH_INTERNAL_ASSERT(cond, __VA_ARGS__)
#define AT_ASSERTM(cond, ...) TORCH_INTERNAL_ASSERT(cond, __VA_ARGS__)
#define AT_ERROR(...) throw ::kiln::Error(::c10::str(__VA_ARGS__))

#define TORCH_WARN(...) ::c10::detail::warn(::c10::str(__VA_ARGS__), __func__, __FILE__, __LINE__)
#define TORCH_WARN_ONCE(...)                   \
  do {                                         \
    static const bool torch_warn_once_ = [&] { \
      TORCH_WARN(__VA_ARGS__);                 \
      return true;                             \
    }();                                       \
    (void)torch_warn_once_;                    \
  } while (0)
