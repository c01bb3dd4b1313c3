#pragma once
// The number of threads Kiln's CPU kernels use, as libtorch's at::set_num_threads /
// at::get_num_threads. Kernels parallelise with OpenMP; OpenBLAS's own pool follows the setting.
namespace kiln {

// Sets the thread count for the calling thread's later ops (OpenMP's per-thread setting) and
// OpenBLAS's global pool. n must be positive.
void set_num_threads(int n);
int get_num_threads();

}  // namespace kiln
