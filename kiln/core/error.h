#pragma once
// kiln::Error: the one exception type. Messages name the op, the inputs and what was expected.
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kiln {

// Core checks (size arithmetic, tensor geometry, allocation) throw the subclasses below without
// an op's name; the dispatcher adds the op and its arguments.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
  // libtorch's c10::Error accessors. Kiln's messages carry no backtrace, so both are what().
  std::string msg() const { return what(); }
  const char* what_without_backtrace() const noexcept { return what(); }
};

// A size, stride, offset or byte count that does not fit int64 (Python's OverflowError).
class OverflowError : public Error {
 public:
  using Error::Error;
};

// An argument outside what an operation accepts, such as a negative size (c10::ValueError).
class ValueError : public Error {
 public:
  using Error::Error;
};

// An index outside a list or dimension (c10::IndexError).
class IndexError : public Error {
 public:
  using Error::Error;
};

// An allocation that the device cannot satisfy (c10::OutOfMemoryError).
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

// A read of the values of a traced tensor (item(), data_ptr(), printing) while kiln::compile
// captures a function: the tracer catches it and runs that function eagerly instead.
class DataDependentError : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <class... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
[[noreturn]] void throw_error(const std::string& msg);
// Called inside a catch block: rethrows a core error (OverflowError, ValueError,
// OutOfMemoryError, std::bad_alloc) as the same type with "op: " in front and `args` after, and
// any other std::exception as an Error that way. Other kiln::Errors, errors that already name
// `op` and exceptions not derived from std::exception pass on unchanged.
[[noreturn]] void rethrow_in(std::string_view op, const std::string& args);
}  // namespace detail

}  // namespace kiln

// KILN_CHECK(cond, "op: ", what, ...) throws kiln::Error with the concatenated message.
#define KILN_CHECK(cond, ...)                                            \
  do {                                                                   \
    if (!(cond)) [[unlikely]]                                            \
      ::kiln::detail::throw_error(::kiln::detail::str_cat(__VA_ARGS__)); \
  } while (0)

#define KILN_FAIL(...) ::kiln::detail::throw_error(::kiln::detail::str_cat(__VA_ARGS__))
