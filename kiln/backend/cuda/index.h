#pragma once
// CUDA kernels that read elements at positions held in an index tensor: gather, index_select and
// embedding (one generated gather kernel), embedding_backward (a scatter-add with atomics) and
// nll_loss (a target per row). Every index and target is checked on the device
// (device_assert.h): a bad one raises a kiln::Error at the next synchronisation, naming the op.
#include <string>

#include "kiln/core/dtype.h"

namespace kiln::cuda {

// The gather kernel over elements of `element_bytes` (1, 2, 4 or 8) with `index` (int32 or
// int64) positions:
//   (GatherArgs a, KilnDeviceAssert* record, unsigned long long launch)
// where GatherArgs is, as 8-byte words: self, out, index, sizes[8], out_strides[8],
// self_strides[8], index_strides[8], ndim, dim, dim_size, numel. out[i] = self at i's
// coordinates with dim replaced by index[i]; an index outside [0, dim_size) fails a check and
// writes 0.
std::string gather_source(int element_bytes, ScalarType index, const std::string& name);

// Rows of self moved whole, in chunks of `chunk_bytes` (1, 2, 4, 8 or 16):
//   (const Chunk* self, Chunk* out, const Index* index, int64_t n, int64_t chunks,
//    int64_t self_row, int64_t index_step, int64_t rows, KilnDeviceAssert*, launch)
// out chunk i = self chunk index[r] * self_row + c for r = i / chunks, c = i % chunks; an index
// outside [0, rows) fails a check and writes zeros.
std::string gather_rows_source(int chunk_bytes, ScalarType index, const std::string& name);

// embedding_backward's scatter-add of gradient rows (float32 or float64):
//   (const T* grad, const Index* idx, T* out, int64_t k, int64_t d, int64_t rows,
//    int64_t padding_idx, KilnDeviceAssert* record, unsigned long long launch)
std::string embedding_backward_source(ScalarType dtype, ScalarType index, const std::string& name);

// nll_loss's per-target terms: per[k] = -w[t] * x[i, t, s] and wt[k] = w[t] for the target t
// at k = i * inner + s (both 0 where t == ignore_index); per and wt are float (double for
// float64 input):
//   (const X* x, const Target* target, const X* weight (may be null), Acc* per, Acc* wt,
//    int64_t k, int64_t classes, int64_t inner, int64_t ignore, KilnDeviceAssert*, launch)
std::string nll_loss_source(ScalarType x, ScalarType target, const std::string& name);

// Sets the CUDA kernels of gather, index_select, embedding, embedding_backward and nll_loss.
void register_index_kernels();

}  // namespace kiln::cuda
