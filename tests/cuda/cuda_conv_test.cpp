// Convolutions on cuDNN (where the build found it) against the CPU: every layout the CNN layers
// use, forward and both gradients, and a small CNN's training steps. Skips without a GPU.
#include "tests/cuda/cuda_test_util.h"

namespace kiln {
namespace {

TEST(CudaConv, ConvolutionsAndTheirGradientsMatchTheCpu) {
  REQUIRE_GPU();
  manual_seed(4);
  struct Case {
    std::vector<int64_t> x, w;
    int64_t stride, padding, dilation, groups;
    bool transposed;
  };
  const Case cases[] = {
      {{2, 3, 9, 9}, {4, 3, 3, 3}, 1, 1, 1, 1, false},
      {{2, 4, 10, 8}, {6, 2, 3, 3}, 2, 1, 1, 2, false},
      {{2, 3, 11}, {5, 3, 3}, 1, 2, 2, 1, false},
      {{1, 2, 5, 5, 5}, {3, 2, 3, 3, 3}, 1, 1, 1, 1, false},
      {{2, 4, 5, 5}, {4, 3, 3, 3}, 2, 1, 1, 1, true},
  };
  for (ScalarType dt : {kFloat64, kFloat32, kBFloat16}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " x" + ::testing::PrintToString(c.x) +
                   (c.transposed ? " transposed" : ""));
      const Tensor x = randn(c.x).to(dt), w = (randn(c.w) * 0.3).to(dt);
      const Tensor b = randn({c.transposed ? c.w[1] : c.w[0]}).to(dt);
      auto run = [&](Device d) {
        Tensor xd = x.to(d).requires_grad_(true), wd = w.to(d).requires_grad_(true);
        Tensor bd = b.to(d).requires_grad_(true);
        const std::vector<int64_t> s(c.x.size() - 2, c.stride), p(c.x.size() - 2, c.padding),
            dil(c.x.size() - 2, c.dilation), op(c.x.size() - 2, 0);
        Tensor y = convolution(xd, wd, bd, s, p, dil, c.transposed, op, c.groups);
        (y * y).sum().backward();
        return std::vector<Tensor>{y.detach().cpu(), xd.grad().cpu(), wd.grad().cpu(),
                                   bd.grad().cpu()};
      };
      const auto gpu = run(Device(kCUDA)), cpu = run(Device(kCPU));
      const double tol = dt == kFloat64 ? 1e-10 : dt == kFloat32 ? 1e-4 : 3e-2;
      for (size_t i = 0; i < cpu.size(); ++i) {
        const Tensor ref = cpu[i].to(kFloat64);
        const double scale = std::max(1.0, ref.abs().max().item<double>());
        EXPECT_LT((gpu[i].to(kFloat64) - ref).abs().max().item<double>(), tol * scale)
            << "result " << i;
      }
    }
  }
  for (const char* op : {"convolution", "convolution_backward_weight"})
    EXPECT_FALSE(testing::fell_back(op)) << op << " fell back (was cuDNN found at build time?)";
}

TEST(CudaConv, ASmallCnnTrainsAsOnTheCpu) {
  REQUIRE_GPU();
  auto train = [](Device device) {
    manual_seed(5);
    nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1)), nn::ReLU(),
                       nn::Conv2d(nn::Conv2dOptions(8, 8, 3).stride(2).padding(1)), nn::ReLU(),
                       nn::Flatten(), nn::Linear(8 * 7 * 7, 10));
    net->to(device);
    optim::SGD opt(net->parameters(), optim::SGDOptions(0.05).momentum(0.9));
    manual_seed(6);
    const Tensor x = randn({16, 1, 14, 14}).to(device), t = randint(0, 10, {16}).to(device);
    std::vector<double> losses;
    for (int s = 0; s < 5; ++s) {
      opt.zero_grad();
      Tensor loss = nn::functional::cross_entropy(net->forward(x), t);
      loss.backward();
      opt.step();
      losses.push_back(loss.item<double>());
    }
    return losses;
  };
  const std::vector<double> cpu = train(Device(kCPU)), gpu = train(Device(kCUDA));
  for (size_t i = 0; i < cpu.size(); ++i) EXPECT_NEAR(gpu[i], cpu[i], 1e-3) << "step " << i;
  EXPECT_LT(gpu.back(), gpu.front());
}

}  // namespace
}  // namespace kiln
