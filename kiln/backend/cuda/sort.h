#pragma once
// CUDA kernels of the ops defined by a stable order on (value, position) (Note [Ties as
// PyTorch's CPU kernels resolve them] in kiln/backend/cpu/sort_algorithms.h): sort (and argsort)
// and median, along a dim or of all elements, by a bitonic sort of each row in shared memory;
// and searchsorted, a binary search per value. topk, kthvalue and mode report whichever of equal
// elements their CPU algorithms leave in place, so they keep the CPU fallback.
#include <string>

#include "kiln/core/dtype.h"

namespace kiln::cuda {

// Rows of at most this many elements are sorted on the device; longer ones take the fallback.
constexpr int64_t kMaxSortRow = 2048;

// The row sort, over a contiguous [rows, n] input of `dtype`:
//   (const T* x, T* values, int64_t* indices, int64_t rows, int64_t n, int descending, int pick)
// pick 0 writes each row sorted (values and original positions, [rows, n]); pick 1 writes the
// lower median of each row ([rows]): the element of stable rank (n - 1) / 2, or the first NaN.
// Dynamic shared memory: sort_shared_bytes(dtype, n).
std::string sort_rows_source(ScalarType dtype, const std::string& name);
size_t sort_shared_bytes(ScalarType dtype, int64_t n);

// searchsorted over contiguous boundaries [seq_rows, n] and values of `dtype`:
//   (const T* seq, const T* values, Index* out, int64_t total, int64_t n, int64_t seq_rows,
//    int64_t inner, int right)
std::string search_source(ScalarType dtype, ScalarType index, const std::string& name);

// Sets the CUDA kernels of sort, median_dim, median and searchsorted.
void register_sort_kernels();

}  // namespace kiln::cuda
