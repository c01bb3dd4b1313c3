#pragma once
// CUDA kernels for layer_norm and rms_norm and their fused backward ops, generated per dtype and
// compiled by NVRTC. A warp normalises one row (statistics in float, double for float64, as on
// the CPU); the backward's input gradient is a row pass too, and the weight and bias gradients
// are column sums over chunks of rows, finished by a sum over the chunks.
#include <string>

#include "kiln/core/dtype.h"

namespace kiln::cuda {

// forward:  (const T* x, const T* w, const T* b, T* y, Acc* mean, Acc* rstd, int64_t rows,
//            int64_t n, double eps, int centered)       w, b, mean may be null
// backward: (const T* gy, const T* x, const Acc* mean, const Acc* rstd, const T* w, T* gx,
//            int64_t rows, int64_t n, int centered)     w, mean may be null
// columns:  (const T* gy, const T* x, const Acc* mean, const Acc* rstd, Acc* gw, Acc* gb,
//            int64_t rows, int64_t n, int64_t rows_per_chunk)
//            gw, gb are [chunks, n]; gb and mean may be null
// T is `dtype`'s storage type, Acc float (double for float64).
enum class NormKernel { Forward, Backward, Columns };
std::string norm_source(NormKernel kind, ScalarType dtype, const std::string& name);

// Sets the CUDA kernels of layer_norm, rms_norm, layer_norm_backward and rms_norm_backward.
void register_norm_kernels();

}  // namespace kiln::cuda
