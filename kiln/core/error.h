#pragma once
// kiln::Error: the one exception type. Messages name the op, the inputs and what was expected.
#include <sstream>
#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
template <class... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
[[noreturn]] void throw_error(const std::string& msg);
}  // namespace detail

}  // namespace kiln

// KILN_CHECK(cond, "op: ", what, ...) throws kiln::Error with the concatenated message.
#define KILN_CHECK(cond, ...)                                                        \
  do {                                                                               \
    if (!(cond)) [[unlikely]] ::kiln::detail::throw_error(::kiln::detail::str_cat(__VA_ARGS__)); \
  } while (0)

#define KILN_FAIL(...) ::kiln::detail::throw_error(::kiln::detail::str_cat(__VA_ARGS__))
