#pragma once
// c10 utilities a libtorch program uses directly that Kiln has no counterpart for: c10::str,
// c10::irange, c10::InferenceMode and the error types the TORCH_CHECK family throws. They live
// in namespace c10 (see Note [Compat namespaces] in compat/torch/torch.h); c10::Error is
// kiln::Error, found through c10's `using namespace kiln`.
#include <iostream>
#include <iterator>
#include <string>
#include <type_traits>

#include "kiln/kiln.h"

namespace c10 {

// The arguments streamed into one string: c10::str("got ", n, " items").
template <class... Args>
std::string str(const Args&... args) {
  if constexpr (sizeof...(Args) == 0)
    return std::string();
  else
    return ::kiln::detail::str_cat(args...);
}

// for (const auto i : c10::irange(n)) / c10::irange(begin, end): the integers [begin, end).
template <class I>
class integer_range {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = I;
    using difference_type = std::make_signed_t<I>;
    using pointer = const I*;
    using reference = I;
    iterator() = default;
    explicit iterator(I value) : value_(value) {}
    I operator*() const { return value_; }
    iterator& operator++() {
      ++value_;
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++value_;
      return old;
    }
    bool operator==(const iterator& other) const = default;

   private:
    I value_{};
  };
  integer_range(I begin, I end) : begin_(begin), end_(end < begin ? begin : end) {}
  iterator begin() const { return iterator(begin_); }
  iterator end() const { return iterator(end_); }

 private:
  I begin_;
  I end_;
};

template <class Integer1, class Integer2>
requires std::is_integral_v<Integer1> && std::is_integral_v<Integer2> integer_range<Integer2>
irange(Integer1 begin, Integer2 end) {
  return integer_range<Integer2>(static_cast<Integer2>(begin), end);
}

template <class Integer>
requires std::is_integral_v<Integer> integer_range<Integer> irange(Integer end) {
  return integer_range<Integer>(Integer{}, end);
}

// libtorch's error types beyond kiln's (kiln::Error is c10::Error, kiln::ValueError is
// c10::ValueError); all are caught as c10::Error and std::exception.
class IndexError : public ::kiln::Error {
 public:
  using ::kiln::Error::Error;
};
class TypeError : public ::kiln::Error {
 public:
  using ::kiln::Error::Error;
};
class NotImplementedError : public ::kiln::Error {
 public:
  using ::kiln::Error::Error;
};

// InferenceMode: a scope in which no autograd graph is recorded (it disables grad mode, as
// NoGradGuard) and InferenceMode::is_enabled() is true. Kiln has no inference tensors, so
// tensors made inside are ordinary tensors without grad history.
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true)
      : grad_mode_(!enabled && ::kiln::GradMode::is_enabled()), prev_(enabled_flag()) {
    enabled_flag() = enabled;
  }
  ~InferenceMode() { enabled_flag() = prev_; }
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;
  static bool is_enabled() { return enabled_flag(); }

 private:
  static bool& enabled_flag() {
    static thread_local bool enabled = false;
    return enabled;
  }
  ::kiln::AutoGradMode grad_mode_;
  bool prev_;
};

namespace detail {

// TORCH_CHECK's message: the default text when the check has no message arguments.
inline std::string check_message(const char* default_message) { return default_message; }
template <class... Args>
std::string check_message(const char* /*default_message*/, const Args&... args) {
  return ::c10::str(args...);
}

// "[W file:line] Warning: message (function name)" on stderr, as libtorch's default handler.
inline void warn(const std::string& message, const char* function, const char* file, int line) {
  std::cerr << "[W " << file << ":" << line << "] Warning: " << message << " (function " << function
            << ")\n";
}

}  // namespace detail
}  // namespace c10
