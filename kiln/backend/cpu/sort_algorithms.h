#pragma once
// Sorting and selection on one row of order-preserving keys (kiln/backend/cpu/sort_rows.h).
// Each returns positions into the row. K is uint32_t or uint64_t.
//
// Note [Ties as PyTorch's CPU kernels resolve them]
// sort is stable (PyTorch's CPU sort is stable on every path) and median(dim) picks the
// element of stable rank (n - 1) / 2, so both are defined by a total order on (key, position).
// topk, kthvalue and mode are not: which of several equal elements they report is whatever the
// selection algorithm leaves in place. To report the same positions as PyTorch, topk runs
// std::partial_sort (k * 64 <= n) or std::nth_element followed by std::sort of the first k - 1,
// kthvalue runs the median-of-three quickselect of Numerical Recipes' `select`, and mode runs
// std::sort on (value, position) pairs and reports the last position of the first longest run:
// the same algorithms with the same comparisons as PyTorch, so the same elements end up in place.
#include <cstdint>

namespace kiln::cpu {

// Stable sort: idx[0..n) gets the positions in ascending (or descending) key order.
template <class K>
void sort_row(const K* keys, int64_t n, bool descending, int64_t* idx);

// The k largest (or smallest) positions; in order when `sorted`.
template <class K>
void topk_row(const K* keys, int64_t n, int64_t k, bool largest, bool sorted, int64_t* idx);

// Position of the k-th smallest (k from 0).
template <class K>
int64_t kthvalue_row(const K* keys, int64_t n, int64_t k);

// Position of the lower median (stable rank (n - 1) / 2); the first NaN when there is one.
template <class K>
int64_t median_row(const K* keys, int64_t n, bool floating);

// Position of the most frequent value (the smallest such value; NaNs never repeat).
template <class K>
int64_t mode_row(const K* keys, int64_t n, bool floating);

}  // namespace kiln::cpu
