// Gradients of the wrong shape, dtype or device are rejected where PyTorch rejects them: hooks,
// the .grad setter and custom Functions' backward.
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "tests/ops/op_test_util.h"

namespace kiln {
namespace {

TEST(GradientValidation, HooksMayNotChangeTheGradientsSize) {
  Tensor x = ones({3}, requires_grad());
  x.register_hook([](const Tensor&) { return ones({5}); });
  std::string m = testing::error_message([&] { (x * 2).sum().backward(); });
  EXPECT_EQ(m, "backward: hook has changed the size of value (was [3] got [5])");
  EXPECT_FALSE(x.grad().defined());
}

TEST(GradientValidation, HooksMayNotChangeTheGradientsType) {
  Tensor x = ones({3}, requires_grad());
  x.register_hook([](const Tensor&) { return ones({3}, kInt64); });
  std::string m = testing::error_message([&] { (x * 2).sum().backward(); });
  EXPECT_EQ(m, "backward: hook has changed the type of value (was CPUFloatType got CPULongType)");
}

TEST(GradientValidation, HooksOnIntermediatesAreCheckedToo) {
  Tensor x = ones({3}, requires_grad());
  Tensor y = x * 2;
  y.register_hook([](const Tensor& g) { return g.sum(); });
  std::string m = testing::error_message([&] { y.sum().backward(); });
  EXPECT_EQ(m, "backward: hook has changed the size of value (was [3] got [])");
  Tensor z = x * 3;
  z.register_hook([](const Tensor& g) { return g * 2; });  // same type and size: fine
  z.sum().backward();
  EXPECT_EQ(x.grad().sum().item<double>(), 18.0);
}

TEST(GradientValidation, SetGradChecksSizeTypeAndDevice) {
  Tensor x = ones({3}, requires_grad());
  EXPECT_EQ(testing::error_message([&] { x.set_grad(ones({7})); }),
            "set_grad: attempting to assign a gradient of size [7] to a tensor of size [3]");
  EXPECT_EQ(testing::error_message([&] { x.set_grad(ones({3}, kFloat64)); }),
            "set_grad: attempting to assign a gradient with dtype float64 to a tensor with "
            "dtype float32");
  EXPECT_FALSE(x.grad().defined());
  x.set_grad(full({3}, 2.0));
  EXPECT_EQ(x.grad().sum().item<double>(), 6.0);
  x.set_grad(Tensor());
  EXPECT_FALSE(x.grad().defined());
}

struct WrongShapeGrad : autograd::Function<WrongShapeGrad> {
  static Tensor forward(autograd::AutogradContext*, Tensor x) { return x * 2; }
  static autograd::variable_list backward(autograd::AutogradContext*, autograd::variable_list) {
    return {ones({5})};
  }
};

struct BroadcastGrad : autograd::Function<BroadcastGrad> {
  static Tensor forward(autograd::AutogradContext*, Tensor x) { return x * 2; }
  static autograd::variable_list backward(autograd::AutogradContext*, autograd::variable_list) {
    return {ones({2, 3})};  // broadcasts to [3]: summed down, as PyTorch does
  }
};

TEST(GradientValidation, CustomFunctionGradientsMustMatchTheInput) {
  Tensor x = ones({3}, requires_grad());
  EXPECT_EQ(testing::error_message([&] { WrongShapeGrad::apply(x).sum().backward(); }),
            "Function torch::autograd::CppNode<kiln::(anonymous namespace)::WrongShapeGrad> "
            "returned an invalid gradient at index 0 - got [5] but expected "
            "shape compatible with [3]");
  BroadcastGrad::apply(x).sum().backward();
  EXPECT_EQ(x.grad().sizes().vec(), std::vector<int64_t>{3});
  EXPECT_EQ(x.grad().sum().item<double>(), 6.0);
}

}  // namespace
}  // namespace kiln
