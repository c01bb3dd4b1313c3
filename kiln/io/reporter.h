#pragma once
// Reporter: throws kiln::Error messages that all start with the same prefix, which names the op and
// the file ("load_safetensors: 'model.safetensors': "). Internal to kiln::io.
#include <new>
#include <string>
#include <utility>

#include "kiln/core/error.h"

namespace kiln::io::detail {

class Reporter {
 public:
  explicit Reporter(std::string prefix) : prefix_(std::move(prefix)) {}
  template <class... Args>
  [[noreturn]] void fail(const Args&... args) const {
    KILN_FAIL(prefix_, args...);
  }
  // Returns f(), turning a std::bad_alloc from it into a kiln::OutOfMemoryError with the prefix,
  // so that an io entry point throws nothing but kiln::Errors.
  template <class F>
  auto run(F&& f) const -> decltype(f()) {
    try {
      return f();
    } catch (const std::bad_alloc&) {
      throw OutOfMemoryError(prefix_ + "out of memory");
    }
  }

 private:
  std::string prefix_;
};

}  // namespace kiln::io::detail

// KILN_IO_CHECK(reporter, cond, "what", ...): reporter.fail(...) when cond is false. A macro, like
// KILN_CHECK, so that the message (names quoted, shapes formatted) is built only on failure.
#define KILN_IO_CHECK(reporter, cond, ...) \
  do {                                     \
    if (!(cond)) [[unlikely]]              \
      (reporter).fail(__VA_ARGS__);        \
  } while (0)
