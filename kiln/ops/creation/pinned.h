#pragma once
// Pinned (page-locked) host memory from a device backend's host allocator: what
// Tensor::pin_memory and TensorOptions::pinned_memory make (pinned.cpp).
#include <optional>

#include "kiln/core/tensor.h"

namespace kiln {

// An uninitialised contiguous CPU tensor in pinned memory of `backend`'s device type, or
// without one, of the current accelerator's (the first backend, CUDA's first, with pinned memory
// and a device); a kiln::Error naming `op` when there is none, or options names a device other
// than the CPU.
Tensor empty_pinned(const char* op, SymIntList size, const TensorOptions& options,
                    std::optional<Device> backend = std::nullopt);

// The same for a non-blocking copy from `source` to the host: undefined when that device's
// backend has no pinned memory.
Tensor empty_pinned_if_available(IntArrayRef size, ScalarType dtype, Device source);

}  // namespace kiln
