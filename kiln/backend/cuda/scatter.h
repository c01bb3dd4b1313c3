#pragma once
// CUDA kernels for the ops that write elements at positions held in index tensors: scatter,
// scatter_value, scatter_add, scatter_reduce, index_add, index_copy, index_fill, index_put and put
// run one generated scatter kernel, parameterised by how an element combines with what it lands
// on; advanced indexing (index) and take turn their index tensors into one linear index on the
// device and read through index_select. Every index is checked on the device (device_assert.h):
// a bad one raises a kiln::Error at the next synchronisation, naming the op.
#include <string>

#include "kiln/backend/cpu/scatter.h"
#include "kiln/core/dtype.h"

namespace kiln::cuda {

// The scatter kernel:
//   (ScatterArgs a, KilnDeviceAssert* record, unsigned long long launch)
// where ScatterArgs is, as 8-byte words: out, src (null: every element sends `value`), index,
// counts (null, or one int per element of a contiguous out), sizes[8], out_strides[8],
// src_strides[8], index_strides[8], ndim, dim, dim_size, numel, allow_negative, value (the bits
// of one element, in the low bytes). Element i of index's shape sends src at i's coordinates to
// out at those coordinates with dim replaced by index[i] (negative values count from the end when
// allow_negative), and adds one to its count. An index out of range fails a check and sends
// nothing.
//
// Assign stores the element (any dtype of `dtype`'s width); Sum, Prod, Max and Min combine it
// atomically, in float32, float64 or int64 (the dtypes the CPU reduces in). Mean is not a kernel:
// it is Sum with counts, then scatter_mean_source's kernel.
std::string scatter_source(cpu::ScatterOp op, ScalarType dtype, ScalarType index,
                           const std::string& name);

// The mean's last step over a contiguous float32, float64 or int64 out:
//   (T* out, const int* counts, int64_t n, int include_self)
// out[i] /= counts[i] + include_self where counts[i] > 0; integers round down.
std::string scatter_mean_source(ScalarType dtype, const std::string& name);

// The linear position, in the indexed dims read as one (row-major), of each element of the shape
// B that up to 8 int64 index tensors broadcast to:
//   (LinearIndexArgs a, KilnDeviceAssert* record, unsigned long long launch)
// where LinearIndexArgs is, as 8-byte words: out (int64, contiguous), index[8], strides[8][8]
// (index k's strides over B), sizes[8] (B), dim_sizes[8], dims[8] (the indexed dims, for
// errors), count, ndim, numel. Negative indices count from the end; a value outside
// [-size, size) fails a check and gives -1, which the next kernel's check rejects.
std::string linear_index_source(const std::string& name);

// Sets the CUDA kernels of scatter, scatter_value, scatter_add, scatter_reduce, index_add,
// index_copy, index_fill, index_put, index, take and put (and so of their in-place forms).
void register_scatter_kernels();

}  // namespace kiln::cuda
