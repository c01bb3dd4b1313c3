#pragma once
// Overflow-checked integer arithmetic for sizes, strides, offsets and byte counts, and the one
// check of a tensor's geometry that every TensorImpl passes. See Note [Checked sizes] in
// size_math.cpp.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kiln/core/error.h"

namespace kiln {

// Declared here so that symint.h can include this header.
class SymInt;
using SymShape = std::vector<SymInt>;
template <class T>
class ArrayRef;
using IntArrayRef = ArrayRef<int64_t>;
class StorageImpl;

namespace detail {
[[noreturn]] void throw_size_overflow(int64_t a, char op, int64_t b);
[[noreturn]] void throw_size_too_large(uint64_t v);
[[noreturn]] void throw_index_out_of_range(const char* what, size_t index, size_t size);
}  // namespace detail

inline int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) [[unlikely]]
    detail::throw_size_overflow(a, '+', b);
  return r;
}
inline int64_t checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) [[unlikely]]
    detail::throw_size_overflow(a, '-', b);
  return r;
}
inline int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) [[unlikely]]
    detail::throw_size_overflow(a, '*', b);
  return r;
}

// The number of elements of concrete sizes: 0 when any size is 0 (whatever the others), else
// the product, which must fit int64. Negative sizes are an error.
int64_t checked_numel(IntArrayRef sizes);

// Bytes a strided layout reaches from its storage's start: (offset + 1 + sum (size-1)*stride)
// elements, 0 for an empty layout. Throws OverflowError when it does not fit int64.
int64_t layout_nbytes(const SymShape& sizes, const SymShape& strides, const SymInt& offset,
                      size_t element_size);

// The check every TensorImpl passes (concrete geometry only; symbolic sizes are checked when
// they become concrete): sizes are non-negative, numel fits int64, and every element the
// strides reach lies inside `storage` (skipped for meta storage).
void check_geometry(const SymShape& sizes, const SymShape& strides, const SymInt& offset,
                    size_t element_size, const StorageImpl& storage);

}  // namespace kiln
