#pragma once
// The CUDA kernels of the matrix products (mm, bmm, addmm, baddbmm), on cuBLAS.
namespace kiln::cuda {
void register_gemm_kernels();
}
