#pragma once
// kiln::cuda: what a program asks about CUDA devices (torch::cuda in libtorch). The answers come
// from the CUDA backend, libkiln_cuda.so, which Kiln loads on first use when it was built
// (docs/cuda.md); without it, or without a GPU and driver, is_available() is false and
// device_count() is 0, and programs written as `torch::cuda::is_available() ? kCUDA : kCPU` run
// on the CPU.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace kiln::cuda {

// Number of CUDA devices Kiln can use (0 without a CUDA backend or device).
size_t device_count();
bool is_available();
// cuDNN is usable (false: Kiln's CUDA backend does not use cuDNN yet).
bool cudnn_is_available();
// Seeds the default generator of the current / of every CUDA device.
void manual_seed(uint64_t seed);
void manual_seed_all(uint64_t seed);
// Waits for all work on `device_index` (-1: the current device); an index out of range is an
// error, and -1 without a device returns at once.
void synchronize(int64_t device_index = -1);
int64_t current_device();
void set_device(int64_t device_index);

// The caching allocator, as torch.cuda's functions of the same names (device -1: the current).
std::map<std::string, int64_t> memory_stats(int64_t device = -1);
int64_t memory_allocated(int64_t device = -1);
int64_t max_memory_allocated(int64_t device = -1);
int64_t memory_reserved(int64_t device = -1);
int64_t max_memory_reserved(int64_t device = -1);
void reset_peak_memory_stats(int64_t device = -1);
// Returns cached, unused device memory to the driver.
void empty_cache();

}  // namespace kiln::cuda
