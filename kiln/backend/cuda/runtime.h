#pragma once
// The CUDA backend's view of the CUDA runtime: error checking and the current device and stream.
// Only the backend (libkiln_cuda.so) includes this; the core never sees a CUDA header.
#include <cuda_runtime_api.h>

namespace kiln::cuda::detail {

// Throws a kiln::Error "<what>: <CUDA's error name and text>" when `err` is not cudaSuccess.
void check(cudaError_t err, const char* what);

// The device that new work goes to on this thread (cudaGetDevice), and its current stream.
int current_device();
cudaStream_t current_stream();
void set_current_stream(int device, cudaStream_t stream);

}  // namespace kiln::cuda::detail
