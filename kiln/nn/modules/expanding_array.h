#pragma once
// ExpandingArray<D>: D integers given either as one value (repeated D times) or as a list, as
// libtorch's kernel_size / stride / padding options take them: Conv2dOptions(3, 8, 3) or
// Conv2dOptions(3, 8, {3, 5}).
#include <array>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "kiln/core/array_ref.h"
#include "kiln/core/error.h"

namespace kiln {

template <size_t D, class T = int64_t>
class ExpandingArray {
 public:
  ExpandingArray(T single) { values_.fill(single); }  // NOLINT: Conv2d(..., 3)
  ExpandingArray(std::initializer_list<T> list) : ExpandingArray(std::vector<T>(list)) {}  // NOLINT
  ExpandingArray(const std::vector<T>& list) {                                             // NOLINT
    KILN_CHECK(list.size() == D, "Expected ", D, " values but got ", list.size());
    for (size_t i = 0; i < D; ++i) values_[i] = list[i];
  }
  T operator[](size_t i) const { return values_[i]; }
  const T* data() const { return values_.data(); }
  static constexpr size_t size() { return D; }
  std::vector<T> vec() const { return {values_.begin(), values_.end()}; }
  operator IntArrayRef() const  // NOLINT: passes straight to the conv functions
      requires std::is_same_v<T, int64_t> {
    return IntArrayRef(values_.data(), D);
  }

 private:
  std::array<T, D> values_{};
};

}  // namespace kiln
