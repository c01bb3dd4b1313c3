#pragma once
// KILN_ARG(T, name): a chainable option field, as libtorch's TORCH_ARG. Inside an options struct
//   KILN_ARG(bool, bias) = true;
// gives `opts.bias(false)` (returns *this) and `opts.bias()` (reads it).
#include <utility>

#define KILN_ARG(T, name)                                         \
 public:                                                          \
  inline auto name(const T& new_##name)->decltype(*this) {        \
    this->name##_ = new_##name;                                   \
    return *this;                                                 \
  }                                                               \
  inline auto name(T&& new_##name)->decltype(*this) {             \
    this->name##_ = std::move(new_##name);                        \
    return *this;                                                 \
  }                                                               \
  inline const T& name() const noexcept { return this->name##_; } \
  inline T& name() noexcept { return this->name##_; }             \
                                                                  \
 private:                                                         \
  T name##_
