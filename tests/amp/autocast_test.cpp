// kiln::autocast: products and convolutions in bfloat16/float16, softmax, norms and losses in
// float32, the rest by type promotion; gradients reach float32 parameters.
#include <gtest/gtest.h>

#include "kiln/amp/autocast.h"
#include "kiln/kiln.h"
#include "tests/ops/op_test_util.h"

namespace kiln {
namespace {

TEST(Autocast, ProductsRunLowSoftmaxAndLossesRunFloat32) {
  manual_seed(1);
  Tensor a = randn({8, 16}), b = randn({16, 4});
  Tensor want = a.matmul(b);
  for (ScalarType low : {kBFloat16, kFloat16}) {
    autocast on(kCPU, low);
    EXPECT_TRUE(is_autocast_enabled());
    EXPECT_EQ(get_autocast_dtype(), low);
    Tensor y = a.matmul(b);
    EXPECT_EQ(y.dtype(), low);
    EXPECT_TRUE(y.to(kFloat32).allclose(want, 3e-2, 3e-2));
    Tensor s = y.softmax(1);
    EXPECT_EQ(s.dtype(), kFloat32);
    Tensor ls = y.log_softmax(1);
    EXPECT_EQ(nn::functional::nll_loss(ls, zeros({8}, kInt64)).dtype(), kFloat32);
    EXPECT_EQ(nn::functional::layer_norm(y, nn::functional::LayerNormFuncOptions({4})).dtype(),
              kFloat32);
    // Other ops promote as ever: bfloat16 + float32 is float32.
    EXPECT_EQ(y.add(ones({4})).dtype(), kFloat32);
    EXPECT_EQ(y.relu().dtype(), low);
  }
  EXPECT_FALSE(is_autocast_enabled());
  EXPECT_EQ(a.matmul(b).dtype(), kFloat32);
}

TEST(Autocast, Float64AndNestedDisabledRegionsAreLeftAlone) {
  Tensor a = ones({2, 3}, kFloat64), b = ones({3, 2}, kFloat64);
  autocast on(kCPU, kBFloat16);
  EXPECT_EQ(a.mm(b).dtype(), kFloat64);
  Tensor f = ones({2, 3});
  {
    autocast off(kCPU, kBFloat16, false);
    EXPECT_FALSE(is_autocast_enabled());
    EXPECT_EQ(f.mm(ones({3, 2})).dtype(), kFloat32);
  }
  EXPECT_EQ(f.mm(ones({3, 2})).dtype(), kBFloat16);
}

TEST(Autocast, LayersRunLowAndGradientsReachFloat32Parameters) {
  manual_seed(2);
  nn::Linear fc1(16, 32), fc2(32, 4);
  nn::Conv2d conv(nn::Conv2dOptions(3, 4, 3));
  Tensor x = randn({8, 16}), y = randint(0, 4, {8});
  auto loss_of = [&] {
    Tensor logits = fc2(fc1(x).relu());
    return nn::functional::cross_entropy(logits, y);
  };
  Tensor ref = loss_of();
  Tensor loss;
  {
    autocast on(kCPU, kBFloat16);
    EXPECT_EQ(fc1(x).dtype(), kBFloat16);
    EXPECT_EQ(conv(randn({1, 3, 6, 6})).dtype(), kBFloat16);
    loss = loss_of();
  }
  EXPECT_EQ(loss.dtype(), kFloat32);
  EXPECT_NEAR(loss.item<double>(), ref.item<double>(), 2e-2 * std::abs(ref.item<double>()) + 1e-2);
  loss.backward();
  for (const Tensor& p : fc1->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().dtype(), kFloat32);
    EXPECT_TRUE(p.grad().isfinite().all().item<bool>());
  }
  // The low precision gradient is near the float32 one.
  Tensor g = fc2->weight.grad().clone();
  fc2->zero_grad();
  fc1->zero_grad();
  loss_of().backward();
  EXPECT_TRUE(g.allclose(fc2->weight.grad(), 5e-2, 5e-2));
}

TEST(Autocast, OnlyTheCpuAndLowPrecisionDtypes) {
  EXPECT_TRUE(
      testing::raises([] { autocast on(kCPU, kFloat64); }, "autocast", "bfloat16 or float16, got"));
}

}  // namespace
}  // namespace kiln
