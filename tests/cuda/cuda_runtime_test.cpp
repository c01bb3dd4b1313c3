// The CUDA backend on a GPU: loading, copies, the caching allocator's statistics, kernel choice
// and errors. Every test skips with its reason where no CUDA device is present.
#include <gtest/gtest.h>

#include "kiln/core/cpu_fallback.h"
#include "kiln/core/device_backend.h"
#include "kiln/kiln.h"
#include "tests/cuda/cuda_test_util.h"

namespace kiln {
namespace {

TEST(CudaBackend, LoadsThroughAutoloadAndAnswersWithoutAGpu) {
  // The backend library is found beside libkiln.so (build/kiln/backends) and loads everywhere;
  // without a GPU it reports no devices instead of failing.
  bool loaded = false;
  for (const auto& line : load_device_backends())
    loaded = loaded || line.find("libkiln_cuda.so: loaded") != std::string::npos;
  EXPECT_TRUE(loaded);
  ASSERT_NE(device_backend(kCUDA), nullptr);
  EXPECT_EQ(cuda::is_available(), cuda::device_count() > 0);
  if (!cuda::is_available()) EXPECT_THROW(ones({2}, TensorOptions().device(Device(kCUDA))), Error);
}

TEST(CudaBackend, CopiesRoundTripEveryLayoutAndDtype) {
  REQUIRE_GPU();
  for (ScalarType dt : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt64, kInt32, kBool}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = arange(60).reshape({3, 4, 5}).to(dt).permute({2, 0, 1});
    Tensor g = x.cuda();
    EXPECT_EQ(g.device(), Device("cuda:0"));
    EXPECT_TRUE(equal(g.cpu(), x));
    EXPECT_TRUE(equal(g.contiguous().cpu(), x.contiguous()));
  }
}

TEST(CudaBackend, MemoryStatsFollowAllocations) {
  REQUIRE_GPU();
  cuda::empty_cache();
  const int64_t before = cuda::memory_allocated();
  cuda::reset_peak_memory_stats();
  {
    Tensor t = empty({1 << 20}, TensorOptions(kFloat32).device(kCUDA));  // 4 MiB
    EXPECT_EQ(cuda::memory_allocated() - before, 4 << 20);
    EXPECT_GE(cuda::memory_reserved(), cuda::memory_allocated());
  }
  EXPECT_EQ(cuda::memory_allocated(), before);
  EXPECT_GE(cuda::max_memory_allocated() - before, 4 << 20);
  EXPECT_GT(cuda::memory_stats().at("segment.all.current"), 0);
  cuda::empty_cache();
  EXPECT_LE(cuda::memory_reserved(), cuda::max_memory_reserved());
}

TEST(CudaBackend, PointwiseAndMatmulRunNatively) {
  REQUIRE_GPU();
  manual_seed(1);
  Tensor a = randn({64, 96}), b = randn({96, 32}), c = randn({64, 32});
  Tensor ga = a.cuda(), gb = b.cuda(), gc = c.cuda();
  EXPECT_TRUE(allclose((ga.matmul(gb) + gc).cpu(), a.matmul(b) + c, 1e-4, 1e-4));
  EXPECT_TRUE(allclose(gelu(ga * 2 - 1).cpu(), gelu(a * 2 - 1), 1e-5, 1e-5));
  EXPECT_TRUE(allclose(addmm(gc, ga, gb, 0.5, 2.0).cpu(), addmm(c, a, b, 0.5, 2.0), 1e-4, 1e-4));
  Tensor bf = ga.to(kBFloat16).matmul(gb.to(kBFloat16)).to(kFloat32).cpu();
  EXPECT_LT((bf - a.matmul(b)).abs().max().item<double>(), 0.5);
  auto ops = cpu_fallback_ops();
  for (const char* native : {"mul on cuda", "add on cuda", "gelu on cuda", "mm on cuda"})
    EXPECT_EQ(std::find(ops.begin(), ops.end(), native), ops.end()) << native << " fell back";
}

TEST(CudaBackend, ReductionsAndSoftmaxMatchTheCpuAtEverySize) {
  REQUIRE_GPU();
  manual_seed(2);
  // Short rows (lane groups), long rows (a block each), few very long rows (split over blocks),
  // reduced dims that are not last, and 16-bit inputs.
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{1 << 22}, {3, 20000}, {4096, 7}, {33, 1500}, {8, 64, 130}}) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    Tensor x = randn(shape), g = x.cuda();
    const int64_t last = static_cast<int64_t>(shape.size()) - 1;
    EXPECT_TRUE(allclose(g.sum().cpu(), x.sum(), 1e-3, 1e-4));
    EXPECT_TRUE(allclose(g.mean(last).cpu(), x.mean(last), 1e-5, 1e-5));
    EXPECT_TRUE(equal(g.amax(0).cpu(), x.amax(0)));
    EXPECT_TRUE(equal(g.amin(last, true).cpu(), x.amin(last, true)));
    EXPECT_TRUE(allclose(softmax(g, last).cpu(), softmax(x, last), 1e-6, 1e-5));
    EXPECT_TRUE(allclose(log_softmax(g, 0).cpu(), log_softmax(x, 0), 1e-5, 1e-5));
    Tensor h = x.to(kBFloat16);
    EXPECT_TRUE(
        allclose(h.cuda().sum(last).cpu().to(kFloat32), h.sum(last).to(kFloat32), 1e-2, 2e-2));
  }
  auto ops = cpu_fallback_ops();
  for (const char* native : {"sum on cuda", "mean on cuda", "amax on cuda", "amin on cuda",
                             "softmax on cuda", "log_softmax on cuda", "copy_ on cuda"})
    EXPECT_EQ(std::find(ops.begin(), ops.end(), native), ops.end()) << native << " fell back";
}

TEST(CudaBackend, MixedDeviceInputsAreAClearError) {
  REQUIRE_GPU();
  Tensor a = ones({3}), b = ones({3}).cuda();
  EXPECT_THROW(
      {
        try {
          add(a, b);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("expected all tensors to be on the same device, "
                                               "but found cpu and cuda:0"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      Error);
}

TEST(CudaBackend, TrainsASmallModelAsOnTheCpu) {
  REQUIRE_GPU();
  auto train = [](Device device) {
    manual_seed(3);
    nn::Sequential model(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 1));
    model->to(device);
    optim::Adam opt(model->parameters(), optim::AdamOptions(1e-2));
    manual_seed(4);
    Tensor x = randn({32, 8}).to(device), y = randn({32, 1}).to(device);
    Tensor loss;
    for (int step = 0; step < 5; ++step) {
      opt.zero_grad();
      loss = nn::functional::mse_loss(model->forward(x), y);
      loss.backward();
      opt.step();
    }
    return loss.item<double>();
  };
  EXPECT_NEAR(train(Device(kCUDA)), train(Device(kCPU)), 1e-4);
}

}  // namespace
}  // namespace kiln
