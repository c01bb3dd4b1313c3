#pragma once
// kiln::cuda: what a program asks about CUDA devices (torch::cuda in libtorch). Kiln has no CUDA
// backend yet, so every build answers "no GPU": is_available() is false, device_count() is 0,
// seeding is a no-op and synchronize() has nothing to wait for. This is the seam a CUDA backend
// fills; programs written as `torch::cuda::is_available() ? kCUDA : kCPU` run on the CPU today.
#include <cstddef>
#include <cstdint>

namespace kiln::cuda {

// Number of CUDA devices Kiln can use (0 without a CUDA backend).
size_t device_count();
bool is_available();
// cuDNN is usable (false without a CUDA backend).
bool cudnn_is_available();
// Seeds the default generator of the current / of every CUDA device (nothing to seed without one).
void manual_seed(uint64_t seed);
void manual_seed_all(uint64_t seed);
// Waits for all work on `device_index` (-1: the current device). Without a CUDA backend there
// is no device, so naming one is an error and -1 returns at once.
void synchronize(int64_t device_index = -1);

}  // namespace kiln::cuda
