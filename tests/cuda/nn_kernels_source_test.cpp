// The CUDA backend's normalisation and pooling kernels (nn_kernels.h): without a GPU, every
// source variant compiles with NVRTC and none traps; with one, batch_norm's running statistics
// and a pooling network's outputs and gradients match the CPU, and no op takes the fallback.
#include "kiln/backend/cuda/nn_kernels.h"
#include "kiln/backend/cuda/nvrtc_program.h"
#include "kiln/core/error.h"
#include "tests/cuda/cuda_test_util.h"

namespace kiln {
namespace {

TEST(CudaNnSource, EveryVariantCompiles) {
  using K = cuda::NnKernel;
  int n = 0;
  for (K kind : {K::Moments, K::Affine, K::MaxPool, K::MaxPoolBackward, K::Separable})
    for (ScalarType dt : {kFloat64, kFloat32, kFloat16, kBFloat16}) {
      const std::string name = "kiln_test_nn_" + std::to_string(static_cast<int>(kind)) + "_" +
                               std::string(dtype_name(dt));
      testing::expect_ptx_compiles(cuda::nn_source(kind, dt, name), name), ++n;
    }
  EXPECT_EQ(n, 20);
  EXPECT_THROW(cuda::nn_source(K::Affine, kInt64, "k"), Error);
}

double max_diff(const Tensor& a, const Tensor& b) {
  return (a.cpu().to(kFloat64) - b.cpu().to(kFloat64)).abs().max().item<double>();
}

TEST(CudaNn, BatchNormUpdatesTheRunningStatisticsAsTheCpuDoes) {
  REQUIRE_GPU();
  manual_seed(3);
  const Tensor x = randn({8, 16, 12, 12}) * 2 + 1, w = randn({16}), b = randn({16});
  auto run = [&](Device d) {
    Tensor mean = zeros({16}).to(d), var = ones({16}).to(d);
    Tensor y = batch_norm(x.to(d), w.to(d), b.to(d), mean, var, true, 0.1, 1e-5);
    Tensor z = batch_norm(x.to(d), w.to(d), b.to(d), mean, var, false, 0.1, 1e-5);
    return std::vector<Tensor>{y.cpu(), z.cpu(), mean.cpu(), var.cpu()};
  };
  const std::vector<Tensor> gpu = run(Device(kCUDA)), cpu = run(Device(kCPU));
  for (size_t i = 0; i < cpu.size(); ++i) EXPECT_LT(max_diff(gpu[i], cpu[i]), 1e-4) << i;
  EXPECT_FALSE(testing::fell_back("batch_norm"));
}

TEST(CudaNn, PoolingAndUpsamplingMatchTheCpuWithGradients) {
  REQUIRE_GPU();
  manual_seed(4);
  const Tensor x = randn({4, 8, 20, 18}, kFloat64), up = randn({4, 8, 12, 10}, kFloat64);
  auto run = [&](Device d) {
    Tensor xd = x.to(d).requires_grad_(true);
    Tensor h = group_norm(xd, 4, Tensor(), Tensor(), 1e-5);
    h = std::get<0>(max_pool2d_with_indices(h, {3}, {2}, {1}, {1}, false));
    h = avg_pool2d(h, {2}, {1}, {1}, true, false, std::nullopt);
    h = upsample_bilinear2d(h, {12, 10}, false);
    (h * up.to(d)).sum().backward();
    return std::vector<Tensor>{h.detach().cpu(), xd.grad().cpu()};
  };
  const std::vector<Tensor> gpu = run(Device(kCUDA)), cpu = run(Device(kCPU));
  for (size_t i = 0; i < cpu.size(); ++i) EXPECT_LT(max_diff(gpu[i], cpu[i]), 1e-9) << i;
  for (const char* op :
       {"group_norm", "max_pool2d_with_indices", "max_pool_backward", "avg_pool2d",
        "avg_pool2d_backward", "upsample_bilinear2d", "upsample_bilinear2d_backward"})
    EXPECT_FALSE(testing::fell_back(op)) << op << " fell back";
}

}  // namespace
}  // namespace kiln
