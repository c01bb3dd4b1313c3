// What Kiln's device-backend autoload calls when it loads libkiln_cuda.so.
#include <mutex>

#include "kiln/backend/cuda/backend.h"
#include "kiln/backend/cuda/composite.h"
#include "kiln/backend/cuda/copy.h"
#include "kiln/backend/cuda/cudnn_conv.h"
#include "kiln/backend/cuda/fused_optim.h"
#include "kiln/backend/cuda/gemm.h"
#include "kiln/backend/cuda/index.h"
#include "kiln/backend/cuda/nn_kernels.h"
#include "kiln/backend/cuda/norm.h"
#include "kiln/backend/cuda/pointwise_kernel.h"
#include "kiln/backend/cuda/random.h"
#include "kiln/backend/cuda/reduce.h"
#include "kiln/backend/cuda/reduce_more.h"
#include "kiln/backend/cuda/rnn.h"
#include "kiln/backend/cuda/scatter.h"
#include "kiln/backend/cuda/sort.h"
#include "kiln/core/cuda_hooks.h"
#include "kiln/ops/composite_kernels.h"

extern "C" __attribute__((visibility("default"))) void kiln_device_backend_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto backend = std::make_unique<kiln::cuda::CudaBackend>();
    kiln::cuda::CudaBackend* b = backend.get();
    kiln::register_device_backend(std::move(backend));
    kiln::cuda::register_hooks(*b);
    kiln::set_composite_kernels(kiln::kCUDA);  // first: native kernels below replace them
    kiln::cuda::register_pointwise_kernels();
    kiln::cuda::register_copy_kernels();  // after the pointwise kernels: _to_copy has one too
    kiln::cuda::register_gemm_kernels();
    kiln::cuda::register_reduce_kernels();
    kiln::cuda::register_more_reduce_kernels();
    kiln::cuda::register_index_kernels();
    kiln::cuda::register_scatter_kernels();
    kiln::cuda::register_norm_kernels();
    kiln::cuda::register_composite_kernels();
    kiln::cuda::register_nn_kernels();
    kiln::cuda::register_fused_optimizer_kernels();
    kiln::cuda::register_cudnn_conv_kernels();
    kiln::cuda::register_sort_kernels();
    kiln::cuda::register_random_kernels();
    kiln::cuda::register_rnn_kernels();
  });
}
