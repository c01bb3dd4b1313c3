#pragma once
// CUDA kernels for the reductions that track an index (argmax, argmin, max_dim, min_dim) and for
// the scans (cumsum, cumprod, cummax, cummin), generated as CUDA C++ on the device helpers and
// row layout of reduce.h: the input is permuted so that the reduced (scanned) dims come last and
// made contiguous, then a group of 1 to 32 lanes (rows of up to 1024 elements) or a whole block
// works on each row. Empty inputs run through the CPU fallback.
#include <string>

#include "kiln/core/dtype.h"

namespace kiln::cuda {

// The source of the kernel `name` finding the first largest (max) or smallest element of each
// row of `dt` elements, a NaN before any number (the CPU kernels' rule):
//   (const T* x, T* values, int64_t* indices, int64_t rows, int64_t len, int group)
// values may be null. group: lanes per row (a power of two up to 32), or 0 for a block per row.
std::string arg_reduce_source(bool max, ScalarType dt, const std::string& name);
std::string arg_reduce_kernel_name(bool max, ScalarType dt);

enum class ScanKind { Sum, Prod, Max, Min };

// The source of the kernel `name` scanning each row of `dt` elements:
//   (const T* x, T* y, int64_t* indices, int64_t rows, int64_t len, int group, int64_t per_lane)
// Sum and Prod run in float64 for floating dtypes and int64 for integers (each output rounded
// once, as on the CPU) and ignore indices; Max and Min write the running extreme and its index
// (the last one attained; a NaN, once seen, stays). Each lane scans `per_lane` consecutive
// elements of a tile of lanes * per_lane at a time.
std::string scan_source(ScanKind kind, ScalarType dt, const std::string& name);
std::string scan_kernel_name(ScanKind kind, ScalarType dt);
bool scan_supported(ScanKind kind, ScalarType dt);

// Sets the CUDA kernels of argmax, argmin, max_dim, min_dim, cumsum, cumprod, cummax and cummin.
void register_more_reduce_kernels();

}  // namespace kiln::cuda
