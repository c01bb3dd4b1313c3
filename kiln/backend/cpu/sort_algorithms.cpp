#include "kiln/backend/cpu/sort_algorithms.h"

#include "kiln/backend/cpu/sort_rows.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

namespace kiln::cpu {
namespace {

template <class K, class Pos = int64_t>
struct Entry {
  K key;
  Pos pos;
};

// Stable LSD radix sort of `a` by the bytes [first_byte, last_byte] of key_of(element), 8 bits
// at a time; a byte that is the same in every element costs no pass.
template <class E, class KeyOf>
void radix_sort(E* a, E* tmp, int64_t n, int first_byte, int last_byte, KeyOf key_of) {
  constexpr int kMaxBytes = 8;
  std::array<std::array<int64_t, 256>, kMaxBytes> hist{};
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t k = key_of(a[i]);
    for (int b = first_byte; b <= last_byte; ++b) ++hist[b][(k >> (8 * b)) & 0xff];
  }
  E* src = a;
  E* dst = tmp;
  for (int b = first_byte; b <= last_byte; ++b) {
    auto& h = hist[b];
    if (h[(key_of(src[0]) >> (8 * b)) & 0xff] == n) continue;
    int64_t sum = 0;
    for (auto& c : h) {
      const int64_t count = c;
      c = sum;
      sum += count;
    }
    for (int64_t i = 0; i < n; ++i) dst[h[(key_of(src[i]) >> (8 * b)) & 0xff]++] = src[i];
    std::swap(src, dst);
  }
  if (src != a) std::memcpy(a, src, sizeof(E) * n);
}

constexpr int64_t kSmallRow = 64;  // below this, comparison sorting beats radix passes

// 32-bit keys: (key << 32 | position) packs the total order of (key, position) into one word.
void sort_row32(const uint32_t* keys, int64_t n, bool descending, int64_t* idx) {
  std::vector<uint64_t> a(n);
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t k = descending ? ~keys[i] : keys[i];
    a[i] = (k << 32) | static_cast<uint64_t>(i);
  }
  if (n < kSmallRow) {
    std::sort(a.begin(), a.end());
  } else {
    std::vector<uint64_t> tmp(n);
    radix_sort(a.data(), tmp.data(), n, 4, 7, [](uint64_t v) { return v; });
  }
  for (int64_t i = 0; i < n; ++i) idx[i] = static_cast<int64_t>(a[i] & 0xffffffffu);
}

template <class K>
void sort_row_wide(const K* keys, int64_t n, bool descending, int64_t* idx) {
  std::vector<Entry<K>> a(n);
  for (int64_t i = 0; i < n; ++i) a[i] = {descending ? static_cast<K>(~keys[i]) : keys[i], i};
  if (n < kSmallRow) {
    std::sort(a.begin(), a.end(), [](const Entry<K>& x, const Entry<K>& y) {
      return x.key < y.key || (x.key == y.key && x.pos < y.pos);
    });
  } else {
    std::vector<Entry<K>> tmp(n);
    radix_sort(a.data(), tmp.data(), n, 0, static_cast<int>(sizeof(K)) - 1,
               [](const Entry<K>& e) { return static_cast<uint64_t>(e.key); });
  }
  for (int64_t i = 0; i < n; ++i) idx[i] = a[i].pos;
}

template <class K>
std::vector<Entry<K>> entries(const K* keys, int64_t n) {
  std::vector<Entry<K>> a(n);
  for (int64_t i = 0; i < n; ++i) a[i] = {keys[i], i};
  return a;
}

}  // namespace

template <class K>
void sort_row(const K* keys, int64_t n, bool descending, int64_t* idx) {
  if (n == 0) return;
  if constexpr (sizeof(K) == 4) {
    if (n <= int64_t{0xffffffff}) return sort_row32(keys, n, descending, idx);
  }
  sort_row_wide(keys, n, descending, idx);
}

// (key, position) pairs of 8 bytes where they fit: selection moves half the memory.
template <class K, class Pos, class F>
void with_compact_entries(const K* keys, int64_t n, F f) {
  std::vector<Entry<K, Pos>> q(n);
  for (int64_t i = 0; i < n; ++i) q[i] = {keys[i], static_cast<Pos>(i)};
  f(q);
}

template <class K>
void topk_row(const K* keys, int64_t n, int64_t k, bool largest, bool sorted, int64_t* idx) {
  if (k == 0) return;
  auto select = [&](auto& q) {
    using E = typename std::decay_t<decltype(q)>::value_type;
    auto run = [&](auto before) {
      if (k * 64 <= n) {
        std::partial_sort(q.begin(), q.begin() + k, q.end(), before);
      } else {
        std::nth_element(q.begin(), q.begin() + k - 1, q.end(), before);
        if (sorted) std::sort(q.begin(), q.begin() + k - 1, before);
      }
    };
    if (largest) {
      run([](const E& x, const E& y) { return x.key > y.key; });
    } else {
      run([](const E& x, const E& y) { return x.key < y.key; });
    }
    for (int64_t j = 0; j < k; ++j) idx[j] = static_cast<int64_t>(q[j].pos);
  };
  if (sizeof(K) == 4 && n <= int64_t{0xffffffff}) {
    with_compact_entries<K, uint32_t>(keys, n, select);
  } else {
    with_compact_entries<K, int64_t>(keys, n, select);
  }
}

template <class K>
int64_t kthvalue_row(const K* keys, int64_t n, int64_t k) {
  std::vector<Entry<K>> a = entries(keys, n);
  auto gt = [&](int64_t i, int64_t j) { return a[i].key > a[j].key; };
  auto swap = [&](int64_t i, int64_t j) { std::swap(a[i], a[j]); };
  int64_t lo = 0, hi = n - 1;
  while (hi > lo + 1) {
    // The median of a[lo], a[mid], a[hi] becomes the pivot at a[lo]; a[lo + 1] <= it <= a[hi].
    swap(lo + (hi - lo) / 2, lo + 1);
    if (gt(lo + 1, hi)) swap(lo + 1, hi);
    if (gt(lo, hi)) swap(lo, hi);
    if (gt(lo + 1, lo)) swap(lo + 1, lo);
    const K pivot = a[lo].key;
    int64_t i = lo + 1, j = hi;
    while (true) {
      do ++i;
      while (pivot > a[i].key);
      do --j;
      while (a[j].key > pivot);
      if (j < i) break;
      swap(i, j);
    }
    swap(lo, j);
    if (j <= k) lo = i;
    if (j >= k) hi = j - 1;
  }
  if (hi == lo + 1 && gt(lo, hi)) swap(lo, hi);
  return a[k].pos;
}

template <class K>
int64_t median_row(const K* keys, int64_t n, bool floating) {
  if (floating) {
    for (int64_t i = 0; i < n; ++i)
      if (is_nan_key(keys[i], true)) return i;
  }
  std::vector<Entry<K>> a = entries(keys, n);
  auto mid = a.begin() + (n - 1) / 2;
  std::nth_element(a.begin(), mid, a.end(), [](const Entry<K>& x, const Entry<K>& y) {
    return x.key < y.key || (x.key == y.key && x.pos < y.pos);
  });
  return mid->pos;
}

template <class K>
int64_t mode_row(const K* keys, int64_t n, bool floating) {
  std::vector<Entry<K>> a = entries(keys, n);
  // NaNs compare false both ways, as PyTorch's value comparison does: std::sort then leaves
  // them where PyTorch's leaves them, which decides the positions of the runs around them.
  std::sort(a.begin(), a.end(), [floating](const Entry<K>& x, const Entry<K>& y) {
    return x.key < y.key && !is_nan_key(y.key, floating);
  });
  int64_t best = 0, best_count = 0, count = 0;
  for (int64_t i = 0; i < n; ++i) {
    ++count;
    const bool run_ends = i == n - 1 || a[i].key != a[i + 1].key || is_nan_key(a[i].key, floating);
    if (!run_ends) continue;
    if (count > best_count) {
      best = a[i].pos;
      best_count = count;
    }
    count = 0;
  }
  return best;
}

#define KILN_SORT_INSTANTIATE(K)                                               \
  template void sort_row<K>(const K*, int64_t, bool, int64_t*);                \
  template void topk_row<K>(const K*, int64_t, int64_t, bool, bool, int64_t*); \
  template int64_t kthvalue_row<K>(const K*, int64_t, int64_t);                \
  template int64_t median_row<K>(const K*, int64_t, bool);                     \
  template int64_t mode_row<K>(const K*, int64_t, bool);
KILN_SORT_INSTANTIATE(uint32_t)
KILN_SORT_INSTANTIATE(uint64_t)
#undef KILN_SORT_INSTANTIATE

}  // namespace kiln::cpu
