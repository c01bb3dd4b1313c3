#include "kiln/core/size_math.h"

#include <algorithm>
#include <sstream>

#include "kiln/core/array_ref.h"
#include "kiln/core/storage.h"

// Note [Checked sizes]
// A product or sum of sizes that wraps around int64 turns a huge request into a tiny one: a
// 2^62-element float tensor needs 2^64 bytes, which wraps to 0, and the fill then writes past a
// 0-byte buffer. So size arithmetic is checked where it is computed, once: SymInt's concrete
// +, -, * (which every meta function uses) call checked_add/sub/mul; numel, strides and storage
// bytes are computed here; and every TensorImpl passes check_geometry, which also keeps views
// (as_strided, from_blob, set_) inside their storage. These throw OverflowError or Error without
// the op's name; the dispatcher adds the op and its arguments (dispatch.cpp).

namespace kiln {
using detail::str_cat;

namespace detail {

void throw_size_overflow(int64_t a, char op, int64_t b) {
  throw OverflowError(str_cat("size arithmetic overflows int64: ", a, ' ', op, ' ', b));
}

void throw_size_too_large(uint64_t v) {
  throw OverflowError(str_cat("size ", v, " does not fit int64"));
}

void throw_index_out_of_range(const char* what, size_t index, size_t size) {
  throw IndexError(str_cat(what, ": index ", index, " is out of range for a list of ", size));
}

}  // namespace detail

namespace {

bool all_concrete(const SymShape& v) {
  return std::all_of(v.begin(), v.end(), [](const SymInt& s) { return !s.is_symbolic(); });
}

std::string geometry_str(const SymShape& sizes, const SymShape& strides, const SymInt& offset,
                         size_t element_size) {
  return str_cat("sizes ", sizes, ", strides ", strides, ", storage offset ", offset,
                 " and element size ", element_size);
}

// Sizes is IntArrayRef or SymShape (concrete).
template <class Sizes>
int64_t numel_checked(const Sizes& sizes) {
  bool any_zero = false;
  for (int64_t n : sizes) {
    if (n < 0) throw ValueError(str_cat("negative dimension ", n, " in sizes ", sizes));
    any_zero |= n == 0;
  }
  if (any_zero) return 0;
  int64_t numel = 1;
  for (int64_t n : sizes) {
    if (__builtin_mul_overflow(numel, n, &numel)) {
      throw OverflowError(str_cat("the number of elements of sizes ", sizes, " overflows int64"));
    }
  }
  return numel;
}

}  // namespace

int64_t checked_numel(IntArrayRef sizes) { return numel_checked(sizes); }

int64_t layout_nbytes(const SymShape& sizes, const SymShape& strides, const SymInt& offset,
                      size_t element_size) {
  if (numel_checked(sizes) == 0) return 0;
  int64_t last = offset.guard_int();  // the element farthest from the storage's start
  try {
    for (size_t d = 0; d < sizes.size(); ++d) {
      const int64_t stride = strides[d].guard_int();
      if (stride > 0) last = checked_add(last, checked_mul(sizes[d].guard_int() - 1, stride));
    }
    return checked_mul(checked_add(last, 1), static_cast<int64_t>(element_size));
  } catch (const OverflowError&) {
    throw OverflowError(str_cat(geometry_str(sizes, strides, offset, element_size),
                                " need more than 2^63-1 bytes of storage"));
  }
}

void check_geometry(const SymShape& sizes, const SymShape& strides, const SymInt& offset,
                    size_t element_size, const StorageImpl& storage) {
  if (!all_concrete(sizes)) return;
  const int64_t numel = numel_checked(sizes);
  if (storage.is_meta() || numel == 0 || !all_concrete(strides) || offset.is_symbolic()) return;
  // Every reachable element lies in [offset + sum of negative steps, offset + sum of positive
  // steps]; both ends must lie inside the storage.
  int64_t first = offset.guard_int();
  for (size_t d = 0; d < sizes.size(); ++d) {
    const int64_t stride = strides[d].guard_int();
    if (stride < 0) first = checked_add(first, checked_mul(sizes[d].guard_int() - 1, stride));
  }
  const int64_t nbytes = layout_nbytes(sizes, strides, offset, element_size);
  if (first < 0 || static_cast<uint64_t>(nbytes) > storage.nbytes()) {
    throw ValueError(str_cat(geometry_str(sizes, strides, offset, element_size), " reach ",
                             first < 0 ? "before the start of" : "past the end of",
                             " a storage of ", storage.nbytes(), " bytes"));
  }
}

}  // namespace kiln
