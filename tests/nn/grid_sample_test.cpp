// F::grid_sample and F::affine_grid: outputs and gradients (to the input, the grid and theta) from
// PyTorch 2.x (tests/nn/grid_sample_expected.py) for each mode, padding mode and align_corners,
// with the mode tags; the option checks.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"
#include "tests/nn/conv_pool_test_util.h"
#include "tests/nn/grid_sample_expected.h"

namespace kiln {
namespace {

namespace F = nn::functional;
using testing::error_of;
using testing::expect_values;
using testing::scrambled;
namespace expected = testing::grid_sample;

// 1.6 * sin(0.9 k + 0.3) as [1, 2, 3, 2]: points inside and outside [-1, 1].
Tensor points() {
  std::vector<double> v(12);
  for (size_t k = 0; k < v.size(); ++k) v[k] = 1.6 * std::sin(0.9 * static_cast<double>(k) + 0.3);
  return tensor(v, kFloat64).view({1, 2, 3, 2});
}

void expect_sampled(const F::GridSampleFuncOptions& options, const std::vector<double>& output,
                    const std::vector<double>& input_grad, const std::vector<double>& grid_grad) {
  Tensor x = scrambled({1, 2, 3, 4}).requires_grad_(true);
  Tensor grid = points().requires_grad_(true);
  Tensor y = F::grid_sample(x, grid, options);
  ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{1, 2, 2, 3}));
  expect_values(y, output, 1e-12);
  (y * testing::sine_weights(y)).sum().backward();
  expect_values(x.grad(), input_grad, 1e-12);
  expect_values(grid.grad(), grid_grad, 1e-12);
}

TEST(GridSample, BilinearMatchesPyTorchForEachPaddingMode) {
  expect_sampled(F::GridSampleFuncOptions(), expected::kBilinearZeros,
                 expected::kBilinearZerosInputGrad, expected::kBilinearZerosGridGrad);
  expect_sampled(F::GridSampleFuncOptions().padding_mode(kBorder).align_corners(true),
                 expected::kBilinearBorderAligned, expected::kBilinearBorderAlignedInputGrad,
                 expected::kBilinearBorderAlignedGridGrad);
  expect_sampled(F::GridSampleFuncOptions().mode(kBilinear).padding_mode(kReflection),
                 expected::kBilinearReflection, expected::kBilinearReflectionInputGrad,
                 expected::kBilinearReflectionGridGrad);
  expect_sampled(F::GridSampleFuncOptions().padding_mode(kReflection).align_corners(true),
                 expected::kBilinearReflectionAligned,
                 expected::kBilinearReflectionAlignedInputGrad,
                 expected::kBilinearReflectionAlignedGridGrad);
}

TEST(GridSample, NearestMatchesPyTorch) {
  expect_sampled(F::GridSampleFuncOptions().mode(kNearest), expected::kNearestZeros,
                 expected::kNearestZerosInputGrad, expected::kNearestZerosGridGrad);
  expect_sampled(
      F::GridSampleFuncOptions().mode(kNearest).padding_mode(kReflection).align_corners(true),
      expected::kNearestReflectionAligned, expected::kNearestReflectionAlignedInputGrad,
      expected::kNearestReflectionAlignedGridGrad);
}

TEST(AffineGrid, MatchesPyTorchWithAndWithoutAlignCorners) {
  for (bool align : {false, true}) {
    Tensor theta = tensor(std::vector<double>{0.8, -0.3, 0.1, 0.4, 1.1, -0.2}, kFloat64)
                       .view({1, 2, 3})
                       .requires_grad_(true);
    Tensor g = F::affine_grid(theta, {1, 3, 2, 3}, align);
    ASSERT_EQ(g.sizes().vec(), (std::vector<int64_t>{1, 2, 3, 2}));
    expect_values(g, align ? expected::kAffineGridAligned : expected::kAffineGrid, 1e-12);
    (g * testing::sine_weights(g)).sum().backward();
    expect_values(theta.grad(),
                  align ? expected::kAffineGridAlignedThetaGrad : expected::kAffineGridThetaGrad,
                  1e-12);
  }
}

TEST(GridSample, IdentityGridReproducesTheInput) {
  Tensor x = scrambled({2, 3, 4, 5});
  Tensor theta = tensor(std::vector<double>{1, 0, 0, 0, 1, 0}, kFloat64).view({1, 2, 3});
  Tensor grid = F::affine_grid(theta.expand({2, 2, 3}), {2, 3, 4, 5});
  expect_values(F::grid_sample(x, grid), testing::values(x), 1e-12);
  expect_values(F::grid_sample(x.to(kFloat32), grid.to(kFloat32)), testing::values(x), 1e-4);
}

TEST(GridSample, ErrorMessagesNameTheOptions) {
  Tensor x = scrambled({1, 2, 3, 4}), grid = points();
  std::string e =
      error_of([&] { F::grid_sample(x, grid, F::GridSampleFuncOptions().mode(kBicubic)); });
  EXPECT_NE(e.find("grid_sample: mode must be \"bilinear\" or \"nearest\", got \"bicubic\""),
            std::string::npos)
      << e;
  e = error_of([&] { F::grid_sample(x, grid.to(kFloat32)); });
  EXPECT_NE(e.find("expected input and grid of one floating dtype, got float64 and float32"),
            std::string::npos)
      << e;
  e = error_of([&] { F::affine_grid(zeros({1, 3, 3}), {1, 1, 2, 2}); });
  EXPECT_NE(e.find("affine_grid_generator: expected theta of shape [1, 2, 3], got [1, 3, 3]"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace kiln
