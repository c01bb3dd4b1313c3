#pragma once
// The slices ("rows") of a tensor along one dim, and order-preserving integer keys of their
// values: the sorting and selection kernels work on keys and indices only, so the sorting
// algorithms are compiled for two key types instead of for every dtype.
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kiln/backend/cpu/loops.h"
#include "kiln/backend/cpu/parallel.h"

namespace kiln::cpu {

// Slice r (row-major over the dims other than `dim`) of a tensor starts offset(r) elements
// after data_ptr() and has `length` elements `stride` apart. A 0-dim tensor is one row of one.
class Rows {
 public:
  Rows(const Tensor& t, int64_t dim);
  int64_t count() const { return count_; }
  int64_t length() const { return length_; }
  int64_t stride() const { return stride_; }
  int64_t offset(int64_t r) const;

 private:
  int64_t count_ = 1, length_ = 1, stride_ = 1;
  std::vector<int64_t> outer_sizes_, outer_strides_;  // innermost last
};

// Order-preserving keys: a < b as PyTorch compares (NaN above everything, all NaNs equal,
// -0 == +0) iff key(a) < key(b). 64-bit dtypes need 64-bit keys; the others fit in 32 bits.
template <class T>
using key_t = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;

template <class T>
inline key_t<T> sort_key(T v) {
  if constexpr (std::is_same_v<T, double>) {
    uint64_t b = v != v ? 0x7ff8000000000000ull : std::bit_cast<uint64_t>(v);
    if (b == 0x8000000000000000ull) b = 0;
    return (b >> 63) ? ~b : b | 0x8000000000000000ull;
  } else if constexpr (std::is_floating_point_v<compute_t<T>>) {  // float, Half, BFloat16
    const float f = static_cast<float>(v);
    uint32_t b = f != f ? 0x7fc00000u : std::bit_cast<uint32_t>(f);
    if (b == 0x80000000u) b = 0;
    return (b >> 31) ? ~b : b | 0x80000000u;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return static_cast<uint64_t>(v) ^ 0x8000000000000000ull;
  } else if constexpr (std::is_signed_v<T>) {
    return static_cast<uint32_t>(static_cast<int32_t>(v)) ^ 0x80000000u;
  } else {
    return static_cast<uint32_t>(v);
  }
}

// Whether a key is the key of a NaN (the largest key a float can have).
template <class K>
inline bool is_nan_key(K k, bool floating) {
  if (!floating) return false;
  if constexpr (sizeof(K) == 8) {
    return k > (0x7ff0000000000000ull | 0x8000000000000000ull);
  } else {
    return k > (0x7f800000u | 0x80000000u);
  }
}

// Calls f(keys, n, r) for every row r of x along dim, in parallel over rows; `keys` is a
// per-thread buffer holding the row's keys (uint32_t* or uint64_t*, by x's dtype).
template <class F>
void for_each_row_keys(const char* op, const Tensor& x, int64_t dim, int64_t grain, F&& f) {
  const Rows rows(x, dim);
  visit_all(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    using K = key_t<T>;
    const T* data = x.data_ptr<T>();
    const int64_t n = rows.length(), s = rows.stride();
    parallel_for(0, rows.count(), grain, [&](int64_t begin, int64_t end) {
      std::vector<K> keys(n);
      for (int64_t r = begin; r < end; ++r) {
        const T* p = data + rows.offset(r);
        if (s == 1) {  // the common case, kept apart so that it vectorises
          for (int64_t i = 0; i < n; ++i) keys[i] = sort_key<T>(p[i]);
        } else {
          for (int64_t i = 0; i < n; ++i) keys[i] = sort_key<T>(p[i * s]);
        }
        f(keys.data(), n, r);
      }
    });
  });
}

// Rows per parallel chunk so that a chunk holds about `work` elements.
inline int64_t row_grain(int64_t length, int64_t work = 16384) {
  return std::max<int64_t>(1, work / std::max<int64_t>(length, 1));
}

// out's row `out_row` gets x's row `x_row` elements at positions idx[0..m) (any dtype: copied as
// bytes), and, when indices is defined, the positions themselves.
void write_selected(const Tensor& x, const Rows& xr, int64_t x_row, const int64_t* idx, int64_t m,
                    const Tensor& values, const Rows& vr, int64_t out_row);
void write_indices(const int64_t* idx, int64_t m, const Tensor& indices, const Rows& ir,
                   int64_t out_row);

}  // namespace kiln::cpu
