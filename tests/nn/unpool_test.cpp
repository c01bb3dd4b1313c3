// Max unpooling: outputs and gradients from PyTorch 2.x (tests/nn/unpool_expected.py), with
// overlapping windows (an index twice: written, not summed), output sizes given as D or N, C and
// D values, unbatched inputs, the module spellings and the index checks.
#include <gtest/gtest.h>

#include <sstream>

#include "kiln/kiln.h"
#include "tests/nn/conv_pool_test_util.h"
#include "tests/nn/unpool_expected.h"

namespace kiln {
namespace {

namespace F = nn::functional;
using testing::error_of;
using testing::expect_values;
using testing::scrambled;
using testing::values;
namespace expected = testing::unpool;

// Checks unpool(pooled, indices) against PyTorch's output and the pooled values' gradient.
template <class Unpool>
void expect_unpool(const std::tuple<Tensor, Tensor>& pooled, const Unpool& unpool,
                   std::vector<int64_t> shape, const std::vector<double>& expected,
                   const std::vector<double>& grad) {
  Tensor y = std::get<0>(pooled).detach().requires_grad_(true);
  Tensor out = unpool(y, std::get<1>(pooled));
  ASSERT_EQ(out.sizes().vec(), shape);
  expect_values(out, expected, 1e-12);
  (out * testing::sine_weights(out)).sum().backward();
  expect_values(y.grad(), grad, 1e-12);
}

TEST(MaxUnpool, OneTwoAndThreeDimsMatchPyTorch) {
  expect_unpool(
      max_pool1d_with_indices(scrambled({2, 3, 7}), 2),
      [](const Tensor& y, const Tensor& i) {
        return F::max_unpool1d(y, i,
                               F::MaxUnpool1dFuncOptions(2).output_size(std::vector<int64_t>{7}));
      },
      {2, 3, 7}, expected::kUnpool1d, expected::kUnpool1dGrad);
  expect_unpool(
      max_pool2d_with_indices(scrambled({1, 2, 4, 4}), 2),
      [](const Tensor& y, const Tensor& i) {
        return F::max_unpool2d(y, i, F::MaxUnpool2dFuncOptions(2));
      },
      {1, 2, 4, 4}, expected::kUnpool2d, expected::kUnpool2dGrad);
  expect_unpool(
      max_pool3d_with_indices(scrambled({1, 2, 4, 4, 4}), 2),
      [](const Tensor& y, const Tensor& i) {
        return F::max_unpool3d(y, i, F::MaxUnpool3dFuncOptions(2));
      },
      {1, 2, 4, 4, 4}, expected::kUnpool3d, expected::kUnpool3dGrad);
}

TEST(MaxUnpool, OverlappingWindowsAndGivenSizeMatchPyTorch) {
  expect_unpool(
      max_pool2d_with_indices(scrambled({1, 1, 5, 5}), 3, 2, 1),
      [](const Tensor& y, const Tensor& i) {
        nn::MaxUnpool2d unpool(nn::MaxUnpool2dOptions(3).stride(2).padding(1));
        return unpool(y, i, std::vector<int64_t>{1, 1, 6, 6});
      },
      {1, 1, 6, 6}, expected::kUnpool2dOverlapping, expected::kUnpool2dOverlappingGrad);
}

TEST(MaxUnpool, ModulesInvertThePoolingAndTakeUnbatchedInputs) {
  Tensor x = scrambled({2, 6, 4});  // [C, H, W]
  nn::MaxPool2d pool(nn::MaxPool2dOptions(2));
  nn::MaxUnpool2d unpool(nn::MaxUnpool2dOptions(2));
  auto [y, i] = pool->forward_with_indices(x);
  Tensor back = unpool(y, i);
  ASSERT_EQ(back.sizes().vec(), x.sizes().vec());
  // Each window's maximum is back in place; the rest is zero.
  EXPECT_EQ(values(pool(back)), values(y));
  EXPECT_EQ(values((back != 0).sum()), std::vector<double>{12});

  nn::MaxUnpool3d unpool3(2);
  Tensor v = scrambled({1, 2, 2, 4});  // [C, D, H, W]
  auto [y3, i3] = max_pool3d_with_indices(v, 2);
  EXPECT_EQ(unpool3(y3, i3).sizes().vec(), v.sizes().vec());
  EXPECT_EQ(values(max_pool3d(unpool3(y3, i3), 2)), values(y3));
  nn::MaxUnpool1d unpool1(nn::MaxUnpool1dOptions(3).stride(2));
  std::ostringstream s;
  s << *unpool1;
  EXPECT_EQ(s.str(), "kiln::nn::MaxUnpool1d(kernel_size=[3], stride=[2], padding=[0])");
}

TEST(MaxUnpool, ChecksIndicesAndSizes) {
  Tensor y = scrambled({1, 1, 2, 2});
  Tensor bad = tensor(std::vector<int64_t>{0, 3, 16, 5}).view({1, 1, 2, 2});
  std::string e = error_of([&] { F::max_unpool2d(y, bad, F::MaxUnpool2dFuncOptions(2)); });
  EXPECT_NE(e.find("max_unpool2d: found an invalid max index 16 (output volumes are of size 4x4)"),
            std::string::npos)
      << e;
  e = error_of([&] { max_unpool2d(y, bad.view({1, 1, 4}), {4, 4}); });
  EXPECT_NE(e.find("expected indices of the input's shape [1, 1, 2, 2], got [1, 1, 4]"),
            std::string::npos)
      << e;
  e = error_of([&] {
    F::max_unpool2d(y, bad, F::MaxUnpool2dFuncOptions(2).output_size(std::vector<int64_t>{6, 4}));
  });
  EXPECT_NE(e.find("invalid output_size [6, 4] (dim 0 must be between 3 and 5)"), std::string::npos)
      << e;
  e = error_of([&] { max_unpool3d(y, bad, {4, 4}, {2}, {0}); });
  EXPECT_NE(e.find("max_unpool3d: expected output_size of 3 values, got [4, 4]"), std::string::npos)
      << e;
}

}  // namespace
}  // namespace kiln
