// libtorch's spellings of pooling, normalisation and activation options, F:: FuncOptions,
// printing a module holder and nn::Functional with bound arguments (issue 20).
#include <gtest/gtest.h>

#include <optional>
#include <sstream>

#include "kiln/kiln.h"
#include "tests/nn/conv_pool_test_util.h"

namespace kiln {
namespace {

namespace F = nn::functional;
using testing::values;

Tensor ramp(std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return (arange(n, kFloat64) * 0.37).sin().view(shape);
}

TEST(LibtorchSpelling, PoolingModulesFromAKernelSizeOrOptions) {
  const Tensor x = ramp({1, 2, 6, 6});
  nn::MaxPool2d max2(2);
  EXPECT_EQ(values(max2(x)), values(max_pool2d(x, {2, 2})));
  nn::AvgPool2d avg2(2);
  EXPECT_EQ(values(avg2(x)), values(avg_pool2d(x, {2, 2})));
  nn::MaxPool2d max3(nn::MaxPool2dOptions(3).stride(2));
  EXPECT_EQ(max3->options.stride()[1], 2);
  EXPECT_EQ(values(max3(x)), values(max_pool2d(x, {3, 3}, {2, 2})));
  nn::MaxPool1d max1(3);
  EXPECT_EQ(max1(ramp({1, 2, 9})).size(2), 3);

  nn::AdaptiveAvgPool2d adaptive(nn::AdaptiveAvgPool2dOptions({2, 1}));
  EXPECT_EQ(values(adaptive(x)), values(adaptive_avg_pool2d(x, {2, 1})));
  nn::AdaptiveMaxPool2d adaptive_max(nn::AdaptiveMaxPool2dOptions(3));
  EXPECT_EQ(adaptive_max->options.output_size()[0], 3);
  EXPECT_EQ(values(adaptive_max(x)), values(std::get<0>(adaptive_max_pool2d(x, {3, 3}))));
  nn::AdaptiveAvgPool1d adaptive1(nn::AdaptiveAvgPool1dOptions(2));
  EXPECT_EQ(adaptive1(ramp({1, 2, 9})).size(2), 2);
}

TEST(LibtorchSpelling, FunctionalPoolingTakesTheModuleOptions) {
  const Tensor x = ramp({1, 2, 7, 7});
  EXPECT_EQ(values(F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2))),
            values(max_pool2d(x, {3, 3}, {2, 2})));
  EXPECT_EQ(values(F::avg_pool2d(x, F::AvgPool2dFuncOptions(2).padding(1))),
            values(avg_pool2d(x, {2, 2}, {2, 2}, {1, 1})));
  testing::expect_values(F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions(1)),
                         values(x.mean({2, 3}, true)), 1e-12);
  EXPECT_EQ(values(F::adaptive_max_pool2d(x, F::AdaptiveMaxPool2dFuncOptions({1, 1}))),
            values(x.amax({2, 3}, true)));
  EXPECT_EQ(F::max_pool1d(ramp({1, 1, 8}), F::MaxPool1dFuncOptions(2)).size(2), 4);
}

TEST(LibtorchSpelling, ActivationAndDropoutFuncOptions) {
  const Tensor x = ramp({2, 5}) - 0.2;
  EXPECT_EQ(values(F::softmax(x, F::SoftmaxFuncOptions(1))), values(x.softmax(1)));
  EXPECT_EQ(values(F::softmax(x, 0)), values(x.softmax(0)));
  EXPECT_EQ(F::log_softmax(x, F::LogSoftmaxFuncOptions(1).dtype(kFloat32)).scalar_type(), kFloat32);
  const Tensor leaky = F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.2));
  EXPECT_EQ(values(leaky), values(where(x.gt(0), x, x * 0.2)));
  EXPECT_EQ(values(F::leaky_relu(x)), values(where(x.gt(0), x, x * 0.01)));
  EXPECT_EQ(values(F::dropout(x, F::DropoutFuncOptions().p(0.5).training(false))), values(x));
  EXPECT_EQ(
      values(F::interpolate(
                 ramp({1, 1, 2, 2}),
                 F::InterpolateFuncOptions().size(std::vector<int64_t>{4, 4}).mode("nearest")))
          .size(),
      16u);
}

TEST(LibtorchSpelling, NormAndDropoutOptionAliases) {
  nn::BatchNorm2d bn(nn::BatchNorm2dOptions(3).momentum(0.2).affine(false));
  EXPECT_EQ(bn->options.momentum(), 0.2);
  EXPECT_TRUE(bn->parameters().empty());
  nn::BatchNorm1d bn1(nn::BatchNorm1dOptions(4));
  EXPECT_EQ(bn1->parameters().size(), 2u);
  nn::InstanceNorm2d in(nn::InstanceNorm2dOptions(3).affine(true));
  EXPECT_EQ(in->parameters().size(), 2u);
  EXPECT_FALSE(nn::InstanceNorm1dOptions(2).track_running_stats());
  nn::Dropout2d drop(nn::Dropout2dOptions(0.3));
  EXPECT_EQ(drop->options.p(), 0.3);
}

TEST(LibtorchSpelling, PrintingAHolderPrintsTheModuleTree) {
  nn::Sequential model(nn::Linear(3, 4), nn::ReLU(), nn::Linear(4, 1));
  std::ostringstream via_holder, via_module;
  via_holder << model;
  via_module << *model;
  EXPECT_EQ(via_holder.str(), via_module.str());
  EXPECT_NE(via_holder.str().find("(0): kiln::nn::Linear"), std::string::npos);
  std::ostringstream linear;
  linear << nn::Linear(3, 4);
  EXPECT_EQ(linear.str().rfind("kiln::nn::Linear", 0), 0u);
}

TEST(LibtorchSpelling, FunctionalBindsTrailingArguments) {
  const Tensor x = ramp({2, 3}) - 0.3;
  nn::Sequential model(nn::Functional(kiln::relu), nn::Functional(kiln::leaky_relu, 0.2),
                       nn::Functional(kiln::log_softmax, 1, std::nullopt));
  EXPECT_EQ(values(model(x)), values(x.relu().log_softmax(1)));
  nn::Functional leaky(kiln::leaky_relu, 0.2);
  EXPECT_EQ(values(leaky(x)), values(where(x.gt(0), x, x * 0.2)));
}

}  // namespace
}  // namespace kiln
