#pragma once
// What the CUDA backend's op kernels share: the device a tensor is on, the CPU fallback for
// calls a kernel does not cover, and the launch size of a grid-stride loop.
#include <cuda_runtime_api.h>

#include "kiln/ops/registry.h"

namespace kiln::cuda {

// t's device index (the current device for a tensor made on "cuda").
int device_of(const Tensor& t);

// Whether every defined tensor of ts is a CUDA tensor on device dev (what a kernel needs before
// it takes a call rather than the fallback).
bool on_device(const std::vector<Tensor>& ts, int dev);

// Runs op's CPU kernel on host copies (kiln/core/cpu_fallback.h).
void cpu_fallback(const OpDef& op, const std::vector<Tensor>& in, std::vector<Tensor>& out,
                  const Attrs& attrs);

// The CUDA C++ unsigned type of elements of `bytes` bytes (1, 2, 4 or 8): what kernels that only
// move elements read and write them as.
const char* unsigned_type(int64_t bytes);

// int32 or int64: the dtypes index tensors of the index kernels may have.
inline bool is_index_dtype(ScalarType t) { return t == kInt64 || t == kInt32; }

// A dtype of Kiln's table (not Undefined, nor a value out of range).
inline bool is_known_dtype(ScalarType t) {
  return static_cast<int>(t) >= 0 && static_cast<int>(t) < kNumScalarTypes;
}

// What the floating kernels accumulate in: float64 for float64, else float32.
inline ScalarType float_accumulator(ScalarType t) { return t == kFloat64 ? kFloat64 : kFloat32; }

// Blocks of `threads` for a grid-stride loop over n elements: one per `threads` elements, at
// most what stays resident on the device.
dim3 grid_stride_blocks(int dev, int64_t n, unsigned threads);

}  // namespace kiln::cuda
