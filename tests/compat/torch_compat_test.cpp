// A libtorch-style program compiled through compat/torch/torch.h: only torch::, at:: and c10::
// names, as a libtorch user writes them, and the numbers they must give.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/ATen.h>
#include <cmath>
#include <sstream>
#include <string>
#include <type_traits>

namespace {

double value_at(const torch::Tensor& t, int64_t i) {
  return t.view({-1}).slice(0, i, i + 1).item<double>();
}

// y = x * exp(x) with a hand-written backward, as in libtorch's custom-function tutorial.
struct MulExp : public torch::autograd::Function<MulExp> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x,
                               double scale) {
    ctx->save_for_backward({x});
    ctx->saved_data["scale"] = scale;
    return x * torch::exp(x) * scale;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    torch::Tensor x = ctx->get_saved_variables()[0];
    double scale = ctx->saved_data["scale"].toDouble();
    torch::Tensor dx = grad_outputs[0] * (x + 1.0) * torch::exp(x) * scale;
    return {dx, torch::Tensor()};
  }
};

TEST(TorchCompat, NamesResolveToKilnTypes) {
  static_assert(std::is_same_v<torch::Tensor, at::Tensor>);
  static_assert(std::is_same_v<torch::autograd::Variable, torch::Tensor>);
  static_assert(std::is_same_v<torch::autograd::tensor_list, torch::autograd::variable_list>);
  static_assert(std::is_same_v<c10::optional<int>, std::optional<int>>);
  static_assert(torch::kFloat32 == at::kFloat && c10::kFloat == torch::ScalarType::Float32);
  c10::ScalarType st = torch::kFloat64;
  torch::Dtype dt = at::kDouble;
  EXPECT_EQ(st, dt);
  torch::Device cpu(torch::kCPU);
  EXPECT_TRUE(cpu.is_cpu());
}

TEST(TorchCompat, FactoriesAndOptions) {
  torch::Tensor z = torch::zeros({2, 3}, torch::TensorOptions().dtype(torch::kFloat32));
  EXPECT_EQ(z.dtype(), torch::kFloat32);
  EXPECT_EQ(z.size(0), 2);
  EXPECT_EQ(z.size(1), 3);
  at::Tensor o = at::ones({4}, at::kDouble);
  EXPECT_EQ(o.scalar_type(), c10::ScalarType::Float64);
  EXPECT_DOUBLE_EQ(o.sum().item<double>(), 4.0);
  torch::Tensor t = torch::tensor({1.0, 2.0, 3.0}, torch::dtype(torch::kFloat64));
  EXPECT_DOUBLE_EQ(torch::sum(t).item<double>(), 6.0);
  torch::Tensor v = torch::ones({2, 3}).view({3, 2});
  EXPECT_EQ(v.size(0), 3);
  EXPECT_EQ(v.size(1), 2);
}

TEST(TorchCompat, BackwardOfSumOfSquaresIsTwoX) {
  torch::Tensor x = torch::tensor({1.0, -2.0, 3.5}, torch::requires_grad());
  torch::Tensor y = (x * x).sum();
  y.backward();
  for (int64_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(value_at(x.grad(), i), 2 * value_at(x, i));
}

TEST(TorchCompat, AutogradGradWithCreateGraphGivesSecondDerivative) {
  torch::Tensor x = torch::tensor({0.5, 2.0}, torch::dtype(torch::kDouble).requires_grad(true));
  torch::Tensor y = (x * x * x).sum();
  torch::autograd::variable_list dy = torch::autograd::grad({y}, {x}, {}, true, true);
  EXPECT_DOUBLE_EQ(value_at(dy[0], 1), 12.0);  // 3 x^2
  torch::Tensor d2 = torch::autograd::grad({dy[0].sum()}, {x})[0];
  EXPECT_DOUBLE_EQ(value_at(d2, 0), 3.0);  // 6 x
  EXPECT_DOUBLE_EQ(value_at(d2, 1), 12.0);
  EXPECT_FALSE(x.grad().defined());
}

TEST(TorchCompat, NoGradGuardStopsRecording) {
  torch::Tensor x = torch::ones({3}, torch::requires_grad());
  {
    torch::NoGradGuard no_grad;
    EXPECT_FALSE(torch::autograd::GradMode::is_enabled());
    torch::Tensor y = x * 2.0;
    EXPECT_FALSE(y.requires_grad());
  }
  EXPECT_TRUE(at::GradMode::is_enabled());
  EXPECT_TRUE((x * 2.0).requires_grad());
}

TEST(TorchCompat, CustomAutogradFunction) {
  torch::Tensor x =
      torch::tensor({0.0, 1.0, -0.5}, torch::dtype(torch::kFloat64).requires_grad(true));
  torch::Tensor y = MulExp::apply(x, 2.0);
  EXPECT_DOUBLE_EQ(value_at(y, 1), 2.0 * std::exp(1.0));
  y.sum().backward();
  for (int64_t i = 0; i < 3; ++i) {
    double xi = value_at(x, i);
    EXPECT_NEAR(value_at(x.grad(), i), 2.0 * (xi + 1.0) * std::exp(xi), 1e-12);
  }
}

TEST(TorchCompat, UsingNamespaceTorchLikeLibtorchExamples) {
  using namespace torch;
  Tensor x = ones({2, 2}, requires_grad());
  Tensor y = add(mul(x, 3.0), 1.0).sum();
  autograd::variable_list g = autograd::grad({y}, {x});
  EXPECT_DOUBLE_EQ(value_at(g[0], 3), 3.0);
  EXPECT_EQ(x.dtype(), kFloat);
}

TEST(TorchCompat, ManualSeedMakesRandnRepeatable) {
  torch::manual_seed(7);
  torch::Tensor a = torch::randn({3, 4});
  torch::manual_seed(7);
  torch::Tensor b = torch::randn({3, 4}, torch::kFloat32);
  EXPECT_EQ(a.sizes().vec(), (std::vector<int64_t>{3, 4}));
  EXPECT_DOUBLE_EQ((a - b).abs().sum().item<double>(), 0.0);
  EXPECT_GT(a.abs().sum().item<double>(), 0.0);
}

TEST(TorchCompat, IndexingWithSliceNoneAndEllipsis) {
  using namespace torch::indexing;
  torch::Tensor x = torch::arange(12, torch::kFloat64).view({3, 4});
  torch::Tensor row = x.index({1});  // x[1]
  EXPECT_DOUBLE_EQ(row.sum().item<double>(), 4.0 + 5 + 6 + 7);
  torch::Tensor cols = x.index({Slice(), Slice(1, None, 2)});  // x[:, 1::2]
  EXPECT_EQ(cols.sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_DOUBLE_EQ(cols.sum().item<double>(), 1.0 + 3 + 5 + 7 + 9 + 11);
  torch::Tensor e = x.index({torch::indexing::Ellipsis, None, 0});  // x[..., None, 0]
  EXPECT_EQ(e.sizes().vec(), (std::vector<int64_t>{3, 1}));
  x.index_put_({Slice(0, 2), 0}, -1.0);  // x[0:2, 0] = -1
  EXPECT_DOUBLE_EQ(x.index({0, 0}).item<double>(), -1.0);
  EXPECT_DOUBLE_EQ(x.index({2, 0}).item<double>(), 8.0);
}

TEST(TorchCompat, MatmulAndItsGradient) {
  torch::Tensor a = torch::ones({2, 3}, torch::dtype(torch::kFloat64).requires_grad(true));
  torch::Tensor b = torch::arange(6, torch::kFloat64).view({3, 2});
  torch::Tensor c = torch::matmul(a, b);  // each column of c sums a column of b
  EXPECT_DOUBLE_EQ(c.index({0, 0}).item<double>(), 0.0 + 2 + 4);
  EXPECT_DOUBLE_EQ(c.index({1, 1}).item<double>(), 1.0 + 3 + 5);
  c.sum().backward();
  EXPECT_DOUBLE_EQ(a.grad().index({0, 2}).item<double>(), 4.0 + 5);  // row sums of b
}

TEST(TorchCompat, PrintingAndThreads) {
  std::ostringstream os;
  os << torch::tensor({1.5, 2.5}, torch::kFloat64);
  EXPECT_NE(os.str().find("1.5"), std::string::npos) << os.str();
  const int before = torch::get_num_threads();
  torch::set_num_threads(1);
  EXPECT_EQ(at::get_num_threads(), 1);
  torch::set_num_threads(before);
}

}  // namespace
