// PReLU, GLU and LocalResponseNorm: values from PyTorch 2 (torch.nn.functional, same inputs),
// gradients against finite differences in float64.
#include <gtest/gtest.h>

#include <vector>

#include "kiln/kiln.h"

namespace kiln::nn {
namespace {

void expect_values(const Tensor& t, const std::vector<float>& expected) {
  const Tensor flat = t.flatten().contiguous();
  ASSERT_EQ(flat.numel(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(flat[static_cast<int64_t>(i)].item<float>(), expected[i], 2e-6) << "element " << i;
}

// The gradient of sum(f(x) * weights) against central differences, in float64.
void expect_gradient_matches(const std::function<Tensor(const Tensor&)>& f, const Tensor& x0) {
  const Tensor x = x0.to(kFloat64).requires_grad_();
  const Tensor w = randn(f(x).sizes(), TensorOptions().dtype(kFloat64));
  (f(x) * w).sum().backward();
  const Tensor flat = x.detach().flatten();
  for (int64_t i = 0; i < flat.numel(); ++i) {
    const double eps = 1e-6;
    Tensor plus = flat.clone(), minus = flat.clone();
    plus[i] += eps;
    minus[i] -= eps;
    const double numeric = ((f(plus.view(x.sizes())) * w).sum().item<double>() -
                            (f(minus.view(x.sizes())) * w).sum().item<double>()) /
                           (2 * eps);
    EXPECT_NEAR(x.grad().flatten()[i].item<double>(), numeric, 1e-6) << "element " << i;
  }
}

TEST(PReLU, PerChannelWeightsMatchPyTorch) {
  const Tensor x = arange(-6, 6).to(kFloat32).reshape({1, 3, 2, 2}) / 4;
  expect_values(functional::prelu(x, tensor({0.1f, 0.2f, 0.3f})),
                {-0.15f, -0.125f, -0.1f, -0.075f, -0.1f, -0.05f, 0, 0.25f, 0.5f, 0.75f, 1, 1.25f});
  PReLU module(PReLUOptions().num_parameters(3).init(0.5));
  EXPECT_EQ(module->weight.sizes(), (std::vector<int64_t>{3}));
  EXPECT_FLOAT_EQ(module->forward(x)[0][0][0][0].item<float>(), -0.75f);
  EXPECT_FLOAT_EQ(PReLU()->forward(tensor({-4.0f}))[0].item<float>(), -1.0f);  // init 0.25
  EXPECT_THROW(functional::prelu(x, tensor({0.1f, 0.2f})), Error);

  const Tensor w = tensor({0.1, 0.2, 0.3}, TensorOptions().dtype(kFloat64));
  expect_gradient_matches([&](const Tensor& in) { return prelu(in, w); }, randn({2, 3, 2}) + 0.05);
  const Tensor xin = randn({2, 3, 2}, TensorOptions().dtype(kFloat64));
  expect_gradient_matches([&](const Tensor& weight) { return prelu(xin, weight); },
                          tensor({0.1, 0.2, 0.3}));
}

TEST(GLU, HalvesAlongDimMatchPyTorch) {
  const Tensor g = arange(-4, 4).to(kFloat32).reshape({2, 4}) / 3;
  expect_values(functional::glu(g), {-0.45232484f, -0.41742977f, 0.0f, 0.24368620f});
  expect_values(GLU(0)->forward(g), {-0.66666669f, -0.58257020f, -0.44050425f, -0.24368620f});
  EXPECT_THROW(glu(arange(3).to(kFloat32)), Error);  // odd size
  expect_gradient_matches([](const Tensor& in) { return glu(in, 1); }, randn({2, 4, 3}));
}

TEST(LocalResponseNorm, FourAndThreeDimsMatchPyTorch) {
  const Tensor x4 = arange(1, 17).to(kFloat32).reshape({1, 4, 2, 2}) / 8;
  expect_values(LocalResponseNorm(LocalResponseNormOptions(3).alpha(0.5))->forward(x4),
                {0.11900645f, 0.23209408f, 0.33745277f, 0.43384030f, 0.51977730f, 0.59403384f,
                 0.65671229f, 0.70846879f, 0.75030339f, 0.78338218f, 0.80890584f, 0.82802367f,
                 1.11566758f, 1.13999987f, 1.15813065f, 1.17095816f});
  const Tensor x3 = arange(1, 13).to(kFloat32).reshape({2, 3, 2}) / 4;
  expect_values(functional::local_response_norm(
                    x3, functional::LocalResponseNormFuncOptions(2).alpha(1.0).beta(0.5).k(2.0)),
                {0.17541160f, 0.34299719f, 0.49319693f, 0.61721343f, 0.71428573f, 0.78783858f,
                 0.93126613f, 1.0f, 0.91381156f, 0.93658578f, 0.95382100f, 0.96698755f});
  EXPECT_THROW(local_response_norm(randn({2, 3}), 2), Error);
  expect_gradient_matches(
      [](const Tensor& in) { return local_response_norm(in, 3, 0.3, 0.75, 1.0); },
      randn({2, 4, 3}));
}

}  // namespace
}  // namespace kiln::nn
