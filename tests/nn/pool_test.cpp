// Pooling, upsampling and pixel shuffle beyond the op table: values and indices from PyTorch 2.x
// (torch.nn.functional) for ceil_mode, count_include_pad=False, adaptive pools with sizes that do
// not divide, bilinear with and without align_corners, nearest with a scale factor.
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "tests/nn/conv_pool_test_util.h"

namespace kiln {
namespace {

using testing::error_of;
using testing::expect_values;
using testing::pattern;
using testing::values;

Tensor grid5() {
  return tensor(std::vector<double>{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9,
                                    7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3},
                kFloat64)
      .view({1, 1, 5, 5});
}

TEST(MaxPool2d, CeilModeValuesAndIndicesMatchPyTorch) {
  auto [v, i] = max_pool2d_with_indices(grid5(), 2, 2, 0, 1, true);
  ASSERT_EQ(v.sizes().vec(), (std::vector<int64_t>{1, 1, 3, 3}));
  expect_values(v, {9, 6, 5, 8, 9, 9, 6, 6, 3});
  EXPECT_EQ(i.dtype(), kInt64);
  expect_values(i, {5, 7, 4, 11, 12, 14, 20, 22, 24});
  // Without ceil_mode the last partial window is dropped.
  EXPECT_EQ(max_pool2d(grid5(), 2).sizes().vec(), (std::vector<int64_t>{1, 1, 2, 2}));
}

TEST(MaxPool2d, GradientGoesToTheIndices) {
  Tensor x = grid5().requires_grad_(true);
  auto [v, i] = max_pool2d_with_indices(x, 2, 2, 0, 1, true);
  v.sum().backward();
  std::vector<double> g = values(x.grad());
  std::vector<double> expected(25, 0.0);
  for (int64_t k : {5, 7, 4, 11, 12, 14, 20, 22, 24}) expected[static_cast<size_t>(k)] += 1;
  EXPECT_EQ(g, expected);
}

TEST(AvgPool2d, CountIncludePadFalseMatchesPyTorch) {
  Tensor a = avg_pool2d(grid5(), 3, 2, 1, false, false);
  expect_values(a, {3.75, 3.1666666666666665, 3.5, 4.833333333333333, 5.555555555555555, 6.0, 3.25,
                    4.166666666666667, 4.75});
  // count_include_pad=True divides the corner windows by 9.
  EXPECT_NEAR(values(avg_pool2d(grid5(), 3, 2, 1))[0], 15.0 / 9, 1e-12);
  EXPECT_NEAR(values(avg_pool2d(grid5(), 3, 2, 1, false, true, 2))[0], 7.5, 1e-12);
}

TEST(AdaptivePool2d, NonDivisibleSizesMatchPyTorch) {
  expect_values(adaptive_avg_pool2d(grid5(), {3, 2}), {4.166666666666667, 4.0, 5.222222222222222,
                                                       6.0, 3.6666666666666665, 4.666666666666667});
  auto [v, i] = adaptive_max_pool2d(grid5(), {2, 3});
  expect_values(v, {9, 9, 9, 8, 9, 9});
  expect_values(i, {5, 12, 14, 11, 12, 14});
  EXPECT_EQ(adaptive_avg_pool1d(pattern({2, 7}), 3).sizes().vec(), (std::vector<int64_t>{2, 3}));
}

TEST(Interpolate, BilinearAlignCornersBothWaysMatchesPyTorch) {
  Tensor s = pattern({1, 1, 2, 3});
  expect_values(
      interpolate(s, std::vector<int64_t>{3, 4}, std::nullopt, "bilinear", true),
      {-0.75, -0.5833333333333334, -0.4166666666666667, -0.25, -0.375, -0.20833333333333337,
       -0.041666666666666685, 0.125, 0.0, 0.16666666666666666, 0.3333333333333333, 0.5},
      1e-12);
  expect_values(interpolate(s, std::vector<int64_t>{3, 4}, std::nullopt, "bilinear", false),
                {-0.75, -0.59375, -0.40625, -0.25, -0.375, -0.21875, -0.03125, 0.125, 0.0, 0.15625,
                 0.34375, 0.5},
                1e-12);
}

TEST(Interpolate, NearestWithScaleFactorMatchesPyTorch) {
  Tensor y = interpolate(pattern({1, 1, 2, 3}), std::nullopt, std::vector<double>{1.5});
  ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{1, 1, 3, 4}));
  expect_values(y, {-0.75, -0.75, -0.5, -0.25, -0.75, -0.75, -0.5, -0.25, 0.0, 0.0, 0.25, 0.5});
  std::string e = error_of([] {
    interpolate(pattern({1, 1, 2, 3}), std::vector<int64_t>{4, 4}, std::nullopt, "nearest", true);
  });
  EXPECT_NE(e.find("align_corners option can only be set"), std::string::npos) << e;
}

TEST(PixelShuffle, RoundTripsAndPlacesChannels) {
  Tensor x = pattern({1, 8, 2, 3});
  Tensor y = pixel_shuffle(x, 2);
  ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{1, 2, 4, 6}));
  // out[0, c, h*r + i, w*r + j] = in[0, c*r*r + i*r + j, h, w]
  EXPECT_EQ(values(y.select(0, 0).select(0, 1).select(0, 3))[4],
            values(x.select(0, 0).select(0, 6).select(0, 1))[2]);
  EXPECT_EQ(values(pixel_unshuffle(y, 2)), values(x));
}

TEST(Pooling, ErrorMessages) {
  std::string e = error_of([] { max_pool2d(zeros({1, 1, 2, 2}), 3); });
  EXPECT_NE(e.find("Output size is too small"), std::string::npos) << e;
  e = error_of([] { max_pool2d(zeros({1, 1, 5, 5}), 3, 1, 2); });
  EXPECT_NE(e.find("pad should be at most half of effective kernel size"), std::string::npos) << e;
  e = error_of([] { avg_pool2d(zeros({5, 5}), 2); });
  EXPECT_NE(e.find("expected 3D or 4D input"), std::string::npos) << e;
}

}  // namespace
}  // namespace kiln
