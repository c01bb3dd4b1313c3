#pragma once
// Eager CUDA kernels for the registry's pointwise ops, generated from their lowerings
// (kiln/ops/lowering.h) with the functors the CPU kernels use (kiln/backend/scalar.h), compiled by
// NVRTC on first use (kiln/backend/cuda/nvrtc_program.h) and kept loaded per device.
#include "kiln/ops/registry.h"

namespace kiln::cuda {

// out[0] = op(in...) on out[0]'s device (already allocated, any strides), on the current stream.
// Inputs are CUDA tensors on that device that broadcast to out[0], or 0-dim CPU tensors (Python
// numbers), whose values become kernel arguments. False, having done nothing, when this call has
// no pointwise expression (an op without a pointwise lowering, or a builder that returns null for
// these dtypes or attributes), has several outputs, a CPU input with dims, or more than 8 dims
// once adjacent dims that are contiguous for every operand are merged.
bool run_pointwise(const OpDef& op, const std::vector<Tensor>& in, std::vector<Tensor>& out,
                   const Attrs& attrs);

// op's CUDA kernel: run_pointwise, else `fallback` when there is one, else a kiln::Error naming
// the op. Reads op's lowering at call time, so it may be made while op is being registered.
KernelFn make_pointwise_kernel(const OpDef& op, KernelFn fallback = {});

// Sets the CUDA kernel of every op with a pointwise lowering (pointwise_ops.cpp).
void register_pointwise_kernels();

}  // namespace kiln::cuda
