// Padding modules (kiln/nn/modules/padding.h) against PyTorch 2.x's nn.ReflectionPad1d/2d,
// ReplicationPad1d/2d, ZeroPad2d and ConstantPad1d/2d, with libtorch's option spellings.
#include <gtest/gtest.h>

#include <sstream>

#include "kiln/kiln.h"

namespace kiln {
namespace {

std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

TEST(PaddingModules, TwoD) {
  const Tensor x = arange(6, kFloat32).view({1, 1, 2, 3});
  nn::ReflectionPad2d reflect(nn::ReflectionPad2dOptions({1, 1, 1, 0}));
  EXPECT_EQ(values(reflect(x)), (std::vector<double>{4, 3, 4, 5, 4, 1, 0, 1, 2, 1, 4, 3, 4, 5, 4}));
  nn::ReplicationPad2d replicate(1);
  EXPECT_EQ(values(replicate(x)),
            (std::vector<double>{0, 0, 1, 2, 2, 0, 0, 1, 2, 2, 3, 3, 4, 5, 5, 3, 3, 4, 5, 5}));
  nn::ZeroPad2d zero(nn::ZeroPad2dOptions({0, 1, 1, 0}));
  EXPECT_EQ(values(zero(x)), (std::vector<double>{0, 0, 0, 0, 0, 1, 2, 0, 3, 4, 5, 0}));
  nn::ConstantPad2d constant(1, -1.0);
  const Tensor c = constant(x);
  EXPECT_EQ(c.sizes(), (std::vector<int64_t>{1, 1, 4, 5}));
  EXPECT_EQ(c.sum().item<double>(), 15.0 - 14.0);  // 14 border elements of -1
  std::ostringstream s;
  s << *zero;
  EXPECT_EQ(s.str(), "kiln::nn::ZeroPad2d(padding=[0, 1, 1, 0])");
}

TEST(PaddingModules, OneDAndClone) {
  const Tensor r = tensor({1.0, 2.0, 3.0}).view({1, 1, 3});
  EXPECT_EQ(values(nn::ReflectionPad1d(2)(r)), (std::vector<double>{3, 2, 1, 2, 3, 2, 1}));
  EXPECT_EQ(values(nn::ReplicationPad1d(nn::ReplicationPad1dOptions({0, 2}))(r)),
            (std::vector<double>{1, 2, 3, 3, 3}));
  nn::ConstantPad1d constant(nn::ConstantPad1dOptions({1, 0}, 7.0));
  EXPECT_EQ(values(constant(r)), (std::vector<double>{7, 1, 2, 3}));
  auto copy = std::dynamic_pointer_cast<nn::ConstantPad1dImpl>(constant->clone());
  ASSERT_TRUE(copy != nullptr);
  EXPECT_EQ(copy->options.value(), 7.0);
  EXPECT_EQ(values(copy->forward(r)), (std::vector<double>{7, 1, 2, 3}));
}

}  // namespace
}  // namespace kiln
