// 3-d pooling: values, indices and input gradients from PyTorch 2.x (tests/nn/pool3d_expected.py)
// for ceil_mode, dilation, count_include_pad, divisor_override and adaptive sizes that do not
// divide; unbatched inputs; the libtorch module and functional spellings.
#include <gtest/gtest.h>

#include <sstream>

#include "kiln/kiln.h"
#include "tests/nn/conv_pool_test_util.h"
#include "tests/nn/pool3d_expected.h"

namespace kiln {
namespace {

namespace F = nn::functional;
using testing::error_of;
using testing::expect_values;
using testing::values;
namespace expected = testing::pool3d;

Tensor scrambled() { return testing::scrambled({1, 2, 3, 4, 4}).requires_grad_(true); }

// Backpropagates sum(y * sine_weights(y)) and returns x's gradient.
Tensor grad_of(const Tensor& x, const Tensor& y) {
  (y * testing::sine_weights(y)).sum().backward();
  return x.grad();
}

void expect_pool(const Tensor& x, const Tensor& y, std::vector<int64_t> shape,
                 const std::vector<double>& expected, const std::vector<double>& grad) {
  ASSERT_EQ(y.sizes().vec(), shape);
  expect_values(y, expected, 1e-12);
  expect_values(grad_of(x, y), grad, 1e-12);
}

TEST(MaxPool3d, CeilModeValuesIndicesAndGradientMatchPyTorch) {
  Tensor x = scrambled();
  auto [v, i] = max_pool3d_with_indices(x, {2, 3, 2}, {2, 2, 1}, {1, 1, 0}, 1, true);
  EXPECT_EQ(i.dtype(), kInt64);
  expect_values(i, expected::kMaxPoolCeilIndices);
  expect_pool(x, v, {1, 2, 2, 3, 3}, expected::kMaxPoolCeil, expected::kMaxPoolCeilGrad);
}

TEST(MaxPool3d, DilationMatchesPyTorch) {
  Tensor x = scrambled();
  auto [v, i] = max_pool3d_with_indices(x, 2, 1, 1, {1, 2, 2});
  expect_values(i, expected::kMaxPoolDilatedIndices);
  expect_pool(x, v, {1, 2, 4, 4, 4}, expected::kMaxPoolDilated, expected::kMaxPoolDilatedGrad);
}

TEST(AvgPool3d, PaddingModesAndDivisorMatchPyTorch) {
  Tensor x = scrambled();
  expect_pool(x, avg_pool3d(x, 3, 2, 1, true, false), {1, 2, 2, 3, 3}, expected::kAvgPoolExcludePad,
              expected::kAvgPoolExcludePadGrad);
  x = scrambled();
  expect_pool(x, avg_pool3d(x, {2, 3, 3}, {1, 2, 2}, 1), {1, 2, 4, 2, 2},
              expected::kAvgPoolIncludePad, expected::kAvgPoolIncludePadGrad);
  x = scrambled();
  expect_pool(x, avg_pool3d(x, 2, 2, 1, false, true, 3), {1, 2, 2, 3, 3}, expected::kAvgPoolDivisor,
              expected::kAvgPoolDivisorGrad);
}

TEST(AdaptivePool3d, NonDivisibleSizesMatchPyTorch) {
  Tensor x = scrambled();
  expect_pool(x, adaptive_avg_pool3d(x, {2, 3, 3}), {1, 2, 2, 3, 3}, expected::kAdaptiveAvg,
              expected::kAdaptiveAvgGrad);
  x = scrambled();
  auto [v, i] = adaptive_max_pool3d(x, {2, 3, 3});
  expect_values(i, expected::kAdaptiveMaxIndices);
  expect_pool(x, v, {1, 2, 2, 3, 3}, expected::kAdaptiveMax, expected::kAdaptiveMaxGrad);
}

TEST(Pool3d, UnbatchedInputsDropTheBatchDim) {
  Tensor x = scrambled().detach();
  Tensor u = x.squeeze(0);  // [C, D, H, W]
  EXPECT_EQ(max_pool3d(u, 2).sizes().vec(), (std::vector<int64_t>{2, 1, 2, 2}));
  EXPECT_EQ(values(max_pool3d(u, 2)), values(max_pool3d(x, 2)));
  EXPECT_EQ(values(avg_pool3d(u, 2)), values(avg_pool3d(x, 2)));
  EXPECT_EQ(values(adaptive_avg_pool3d(u, 1)), values(adaptive_avg_pool3d(x, 1)));
  EXPECT_EQ(values(std::get<1>(adaptive_max_pool3d(u, 2))),
            values(std::get<1>(adaptive_max_pool3d(x, 2))));
}

TEST(Pool3d, ModulesAndFunctionalSpellingsMatchTheFunctions) {
  Tensor x = scrambled().detach();
  nn::MaxPool3d max(nn::MaxPool3dOptions(3).stride(2).padding(1).ceil_mode(true));
  EXPECT_EQ(values(max(x)), values(max_pool3d(x, 3, 2, 1, 1, true)));
  EXPECT_EQ(values(F::max_pool3d(x, F::MaxPool3dFuncOptions({2, 3, 2}).stride(1))),
            values(max_pool3d(x, {2, 3, 2}, 1)));
  EXPECT_EQ(values(std::get<1>(max->forward_with_indices(x))),
            values(std::get<1>(max_pool3d_with_indices(x, 3, 2, 1, 1, true))));

  nn::AvgPool3d avg(nn::AvgPool3dOptions(2).stride(1).count_include_pad(false).divisor_override(5));
  EXPECT_EQ(values(avg(x)), values(avg_pool3d(x, 2, 1, 0, false, false, 5)));
  EXPECT_EQ(values(F::avg_pool3d(x, F::AvgPool3dFuncOptions(3).padding(1))),
            values(avg_pool3d(x, 3, {}, 1)));

  nn::AdaptiveAvgPool3d aavg(nn::AdaptiveAvgPool3dOptions({1, 2, 3}));
  EXPECT_EQ(values(aavg(x)), values(adaptive_avg_pool3d(x, {1, 2, 3})));
  nn::AdaptiveMaxPool3d amax(2);
  EXPECT_EQ(values(amax(x)), values(std::get<0>(adaptive_max_pool3d(x, 2))));
  EXPECT_EQ(values(F::adaptive_max_pool3d(x, F::AdaptiveMaxPool3dFuncOptions(2))), values(amax(x)));
  EXPECT_EQ(values(F::adaptive_avg_pool3d(x, F::AdaptiveAvgPool3dFuncOptions(2))),
            values(adaptive_avg_pool3d(x, 2)));

  std::ostringstream s;
  s << *max;
  EXPECT_EQ(s.str(),
            "kiln::nn::MaxPool3d(kernel_size=[3, 3, 3], stride=[2, 2, 2], padding=[1, 1, 1], "
            "dilation=[1, 1, 1], ceil_mode=true)");
}

TEST(Pool3d, ErrorMessagesNameTheOpAndShapes) {
  std::string e = error_of([] { max_pool3d(zeros({4, 4, 4}), 2); });
  EXPECT_NE(e.find("max_pool3d: expected 4D or 5D input, but got input of size: [4, 4, 4]"),
            std::string::npos)
      << e;
  e = error_of([] { avg_pool3d(zeros({1, 1, 2, 2, 2}), 3); });
  EXPECT_NE(e.find("given input size: (1x2x2x2). Calculated output size: (1x0x0x0)"),
            std::string::npos)
      << e;
  e = error_of([] { max_pool3d(zeros({1, 1, 4, 4, 4}), {2, 2}); });
  EXPECT_NE(e.find("list of 3 values to match the 3 spatial dimensions"), std::string::npos) << e;
  e = error_of([] { adaptive_max_pool3d(zeros({1, 1, 4, 4, 4}), {2, 0, 2}); });
  EXPECT_NE(e.find("adaptive_max_pool3d: output_size must be 3 positive values, got [2, 0, 2]"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace kiln
