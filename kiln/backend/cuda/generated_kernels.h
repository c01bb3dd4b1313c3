#pragma once
// Kernels generated at run time (pointwise_kernel.cpp, reduce.cpp): compiled by NVRTC for the
// device's architecture (nvrtc_program.h, which caches the PTX on disk), loaded once per device
// and kept loaded until the process exits.
#include <cuda_runtime_api.h>

#include <functional>
#include <string>

namespace kiln::cuda {

// `body`, a kernel whose name is the placeholder KERNEL, named `name`.
std::string named_kernel(std::string body, const std::string& name);

// The source of kernel `body` named `name`: <cstdint>, kiln/core/half.h, then `types` (its
// dtypes and helpers), then the kernel.
std::string kernel_source(const std::string& types, const std::string& body,
                          const std::string& name);

// The kernel `name` on device `dev`; `source()` is called only when it is not loaded yet, and
// must define `extern "C" __global__ void <name>`. `name` must determine the source.
cudaKernel_t generated_kernel(int dev, const std::string& name,
                              const std::function<std::string()>& source);

// The device's multiprocessor count (what launch sizes are chosen by).
int multiprocessors(int dev);

// How many blocks of `threads` (and no dynamic shared memory) of `fn` fit on one multiprocessor
// at once (its registers decide), on the current device; at least 1.
int resident_blocks(cudaKernel_t fn, unsigned threads);

}  // namespace kiln::cuda
