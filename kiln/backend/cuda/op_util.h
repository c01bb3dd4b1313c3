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

// Blocks of `threads` for a grid-stride loop over n elements: one per `threads` elements, at
// most what stays resident on the device.
dim3 grid_stride_blocks(int dev, int64_t n, unsigned threads);

}  // namespace kiln::cuda
