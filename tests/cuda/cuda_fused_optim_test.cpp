// _fused_adam_, _fused_adamw_ and _fused_sgd_ on a GPU (one launch per 56 parameters of a
// dtype) against the CPU through optim::Adam, AdamW and SGD, and the kernels' sources without a
// GPU.
#include "kiln/backend/cuda/fused_optim.h"
#include "kiln/backend/cuda/nvrtc_program.h"
#include "tests/cuda/cuda_test_util.h"

namespace kiln {
namespace {

TEST(CudaFusedOptimizerSource, EveryParameterDtypeCompiles) {
  for (auto kind : {cuda::FusedOptimizer::Adam, cuda::FusedOptimizer::SGD})
    for (ScalarType dt : {kFloat64, kFloat32, kFloat16, kBFloat16}) {
      const std::string name = "kiln_test_fused_" + std::to_string(static_cast<int>(kind)) + "_" +
                               std::string(dtype_name(dt));
      SCOPED_TRACE(name);
      std::string ptx;
      try {
        ptx =
            cuda::compile_to_ptx(cuda::fused_optimizer_source(kind, dt, name), name, "compute_90");
      } catch (const Error& e) {
        ADD_FAILURE() << e.what();
        continue;
      }
      EXPECT_NE(ptx.find(".entry " + name + "("), std::string::npos);
    }
  EXPECT_THROW(cuda::fused_optimizer_source(cuda::FusedOptimizer::Adam, kInt32, "k"), Error);
}

// 130 parameters (three launches of float32, one of each other dtype): matrices, a transposed
// one, vectors, a 0-dim one and an empty one.
std::vector<Tensor> parameters() {
  std::vector<Tensor> ps;
  for (int i = 0; i < 130; ++i) {
    const ScalarType dt = i % 13 == 5 ? kBFloat16 : i % 13 == 7 ? kFloat64 : kFloat32;
    Tensor p = i % 4 == 0   ? randn({17 + i, 9})
               : i % 4 == 1 ? randn({33 * i + 1})
               : i % 4 == 2 ? randn({6, 5}).t()
                            : randn({1000 + i});
    if (i == 3) p = randn({});
    if (i == 11) p = randn({0, 4});
    ps.push_back(p.to(dt));
  }
  return ps;
}

template <class Optimizer, class Options>
std::vector<Tensor> run_steps(Device device, const Options& options, int steps) {
  manual_seed(21);
  std::vector<Tensor> ps;
  for (const Tensor& p : parameters()) ps.push_back(p.to(device).requires_grad_(true));
  Optimizer opt(ps, options);
  for (int s = 0; s < steps; ++s) {
    manual_seed(100 + s);
    for (const Tensor& p : ps) p.mutable_grad() = randn(p.sizes()).to(p.dtype()).to(device);
    opt.step();
  }
  std::vector<Tensor> out;
  for (const Tensor& p : ps) {
    out.push_back(p.detach().cpu());
    for (const char* b : {"exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer"})
      if (const Tensor* t = opt.state().at(p.impl()).buffers.find(b)) out.push_back(t->cpu());
  }
  return out;
}

template <class Optimizer, class Options>
void expect_gpu_matches_cpu(const Options& options) {
  const std::vector<Tensor> cpu = run_steps<Optimizer>(Device(kCPU), options, 3);
  const std::vector<Tensor> gpu = run_steps<Optimizer>(Device(kCUDA), options, 3);
  ASSERT_EQ(gpu.size(), cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    ASSERT_EQ(gpu[i].dtype(), cpu[i].dtype()) << "tensor " << i;
    const double tol = cpu[i].dtype() == kBFloat16 ? 1e-2 : 1e-5;
    const Tensor diff = (gpu[i].to(kFloat64) - cpu[i].to(kFloat64)).abs();
    EXPECT_LT(
        diff.numel() ? diff.max().item<double>() : 0.0,
        tol * std::max(1.0, cpu[i].numel() ? cpu[i].to(kFloat64).abs().max().item<double>() : 0.0))
        << "tensor " << i << " " << cpu[i].dtype() << cpu[i].sizes();
  }
}

TEST(CudaFusedOptimizers, AdamAdamWAndSgdOverManyParametersMatchTheCpu) {
  REQUIRE_GPU();
  expect_gpu_matches_cpu<optim::AdamW>(optim::AdamWOptions(1e-2).weight_decay(0.1));
  expect_gpu_matches_cpu<optim::Adam>(optim::AdamOptions(1e-2).weight_decay(0.05).amsgrad(true));
  expect_gpu_matches_cpu<optim::Adam>(optim::AdamOptions(3e-3).maximize(true));
  expect_gpu_matches_cpu<optim::SGD>(optim::SGDOptions(0.1));
  expect_gpu_matches_cpu<optim::SGD>(
      optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(1e-3));
  expect_gpu_matches_cpu<optim::SGD>(optim::SGDOptions(0.05).momentum(0.8).dampening(0.2));
  for (const char* op : {"_fused_adam_", "_fused_adamw_", "_fused_sgd_"})
    EXPECT_FALSE(testing::fell_back(op)) << op << " fell back";
}

}  // namespace
}  // namespace kiln
