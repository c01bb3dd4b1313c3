#pragma once
// CUDA kernels of the normalisation and pooling layers: batch_norm and group_norm (a block per
// statistics row, accumulating in double as the CPU does, then one affine pass), max pooling
// and adaptive max pooling (a thread per output over window tables made on the host, as the CPU
// makes them), max_pool_backward (an atomic scatter-add in float, double for float64) and
// max_pool_gather (the gather kernel), and the separable linear maps (avg_pool2d/3d,
// adaptive_avg_pool2d/3d, upsample_nearest2d, upsample_bilinear2d) with their adjoints: one
// gather kernel over per-dim tap tables, the adjoint reading the transposed taps, so the
// backward is deterministic and needs no atomics.
#include <string>

#include "kiln/core/dtype.h"

namespace kiln::cuda {

// T is `dtype`'s storage type (a floating dtype), Acc float (double for float64).
//   Moments:   (const T* x, double* mean, double* var, int64_t rows, int64_t row_stride,
//               int64_t segments, int64_t segment_stride, int64_t len)
//              row r is `segments` runs of `len` elements, run s at r * row_stride +
//              s * segment_stride; mean and biased variance in two passes, in double
//   Affine:    (const T* x, T* y, const Acc* scale, const Acc* shift, int64_t n, int64_t inner,
//               int64_t rows)       y[i] = x[i] * scale[r] + shift[r], r = (i / inner) % rows
//   MaxPool:   (const T* x, T* values, int64_t* indices, const int64_t* spans, int64_t planes,
//               int64_t D, int64_t H, int64_t W, int64_t OD, int64_t OH, int64_t OW)
//              spans: {begin, end, step} for each output of D, then of H, then of W
//   MaxPoolBackward: (const T* grad, const int64_t* indices, Acc* out, int64_t n,
//               int64_t plane_out, int64_t plane_in, KilnDeviceAssert*, unsigned long long)
//   Separable: (const T* x, T* y, const int64_t* taps, const double* weight, int64_t planes,
//               int64_t D, int64_t H, int64_t W, int64_t OD, int64_t OH, int64_t OW)
//              taps: the CSR starts of D's outputs (OD + 1), of H's, of W's, then the indices
enum class NnKernel { Moments, Affine, MaxPool, MaxPoolBackward, Separable };
std::string nn_source(NnKernel kind, ScalarType dtype, const std::string& name);

// Sets the CUDA kernels of batch_norm, group_norm, max_pool2d/3d_with_indices,
// adaptive_max_pool2d/3d, max_pool_backward, max_pool_gather, avg_pool2d/3d,
// adaptive_avg_pool2d/3d, upsample_nearest2d, upsample_bilinear2d and their _backward entries.
void register_nn_kernels();

}  // namespace kiln::cuda
