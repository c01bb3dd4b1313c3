// Convolutions beyond the op table: values from PyTorch 2.x (torch.nn.functional) for
// padding="same" with groups and dilation, transposed convolution with output_padding, the
// gradients of both paths, float32 (oneDNN) against float64 (im2col), and error messages.
#include <gtest/gtest.h>

#include "kiln/backend/cpu/conv_geometry.h"
#include "kiln/kiln.h"
#include "tests/nn/conv_pool_test_util.h"

namespace kiln {
namespace {

using testing::error_of;
using testing::expect_values;
using testing::pattern;
using testing::values;

Tensor sum_of_squares(const Tensor& t) { return (t * t).sum(); }

TEST(Conv2d, SamePaddingGroupsDilationMatchesPyTorch) {
  Tensor x = pattern({1, 4, 5, 5}), w = pattern({4, 2, 2, 3});
  Tensor b = tensor({0.5, -1.0, 0.25, 2.0}, kFloat64);
  // F.conv2d(x, w, b, padding="same", dilation=2, groups=2): the even kernel pads unevenly.
  Tensor y = conv2d(x, w, b, 1, "same", 2, 2);
  ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{1, 4, 5, 5}));
  std::vector<double> v = values(y);
  const std::vector<double> first = {0.3125, 0.5625, 0.4375, 0.375, 0.375, 0.5625, 1.1875, 1.0};
  for (size_t i = 0; i < first.size(); ++i) EXPECT_DOUBLE_EQ(v[i], first[i]);
  EXPECT_DOUBLE_EQ(y.sum().item<double>(), 44.875);
  EXPECT_DOUBLE_EQ(sum_of_squares(y).item<double>(), 180.1015625);
  expect_values(y.select(0, 0).select(0, 3).select(0, 4), {1.8125, 2.4375, 1.75, 2.5625, 2.0625});
}

TEST(Conv2d, SamePaddingGradientsMatchPyTorch) {
  Tensor x = pattern({1, 4, 5, 5}).requires_grad_(true);
  Tensor w = pattern({4, 2, 2, 3}).requires_grad_(true);
  Tensor b = tensor({0.5, -1.0, 0.25, 2.0}, kFloat64);
  sum_of_squares(conv2d(x, w, b, 1, "same", 2, 2)).backward();
  EXPECT_DOUBLE_EQ(x.grad().sum().item<double>(), -37.03125);
  EXPECT_DOUBLE_EQ(sum_of_squares(x.grad()).item<double>(), 1421.6806640625);
  expect_values(w.grad().flatten().slice(0, 0, 6),
                {-9.4375, -3.0625, 4.34375, 3.4375, 5.15625, -1.90625});
}

TEST(ConvTranspose2d, OutputPaddingMatchesPyTorch) {
  Tensor x = pattern({1, 2, 2, 3}), w = pattern({2, 3, 3, 3});
  Tensor y = conv_transpose2d(x, w, {}, 2, 1, 1);
  ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{1, 3, 4, 6}));
  expect_values(y.flatten().slice(0, 0, 10),
                {-0.1875, 0.0, -0.125, -0.3125, -0.0625, -0.25, 1.3125, -1.0, -0.3125, 0.125});
  EXPECT_DOUBLE_EQ(y.sum().item<double>(), 0.5);
  EXPECT_DOUBLE_EQ(sum_of_squares(y).item<double>(), 9.2578125);
  expect_values(y.select(0, 0).select(0, 2).select(0, 3),
                {0.0, -0.0625, 0.0625, 0.0625, 0.125, 0.3125});
}

TEST(Conv2d, Float32AgreesWithFloat64ForwardAndBackward) {
  // float32 runs through oneDNN, float64 through im2col: both must agree.
  Tensor x64 = pattern({2, 6, 9, 8}), w64 = pattern({4, 3, 3, 3}) * 0.5;
  Tensor x32 = x64.to(kFloat32).requires_grad_(true), w32 = w64.to(kFloat32).requires_grad_(true);
  x64.requires_grad_(true);
  w64.requires_grad_(true);
  Tensor y64 = conv2d(x64, w64, {}, {2, 1}, {1, 2}, {1, 2}, 2);
  Tensor y32 = conv2d(x32, w32, {}, {2, 1}, {1, 2}, {1, 2}, 2);
  sum_of_squares(y64).backward();
  sum_of_squares(y32).backward();
  auto close = [](const Tensor& a, const Tensor& b) {
    std::vector<double> va = values(a), vb = values(b);
    ASSERT_EQ(va.size(), vb.size());
    for (size_t i = 0; i < va.size(); ++i) EXPECT_NEAR(va[i], vb[i], 1e-4 * (1 + std::abs(vb[i])));
  };
  close(y32, y64);
  close(x32.grad(), x64.grad());
  close(w32.grad(), w64.grad());
}

TEST(Conv2d, Bfloat16KernelsRunOnFloat32CopiesWhereOneDnnHasNone) {
  // Quarter-valued data: every product and sum below is exact in bfloat16, so the kernels must
  // reproduce the float64 convolution exactly (this CPU may have no oneDNN bfloat16 kernel).
  Tensor x = pattern({1, 2, 4, 5}).requires_grad_(true);
  Tensor w = pattern({3, 2, 3, 3}).requires_grad_(true);
  Tensor y = conv2d(x, w);
  Tensor gy = pattern({1, 3, 2, 3});
  y.backward(gy);
  cpu::ConvGeometry g;
  g.batch = 1, g.in_channels = 2, g.out_channels = 3;
  g.in[1] = 4, g.in[2] = 5, g.out[1] = 2, g.out[2] = 3, g.kernel[1] = 3, g.kernel[2] = 3;
  auto bf = [](const Tensor& t) { return t.detach().to(kBFloat16).contiguous(); };
  Tensor xb = bf(x), wb = bf(w), gyb = bf(gy);
  Tensor yb = empty({1, 3, 2, 3}, kBFloat16), gxb = empty({1, 2, 4, 5}, kBFloat16);
  Tensor gwb = empty({3, 2, 3, 3}, kBFloat16);
  cpu::conv_forward(g, kBFloat16, xb.data_ptr(), wb.data_ptr(), yb.data_ptr());
  cpu::conv_backward_data(g, kBFloat16, gyb.data_ptr(), wb.data_ptr(), gxb.data_ptr());
  cpu::conv_backward_weight(g, kBFloat16, gyb.data_ptr(), xb.data_ptr(), gwb.data_ptr());
  EXPECT_EQ(values(yb), values(y));
  EXPECT_EQ(values(gxb), values(x.grad()));
  EXPECT_EQ(values(gwb), values(w.grad()));
}

TEST(Conv2d, UnbatchedInputAndConv1d3dShapes) {
  Tensor w = pattern({5, 3, 3, 3});
  EXPECT_EQ(conv2d(pattern({3, 7, 6}), w).sizes().vec(), (std::vector<int64_t>{5, 5, 4}));
  expect_values(conv2d(pattern({3, 7, 6}), w), values(conv2d(pattern({1, 3, 7, 6}), w)));
  EXPECT_EQ(conv1d(pattern({2, 3, 10}), pattern({4, 3, 3}), {}, 2, 1).sizes().vec(),
            (std::vector<int64_t>{2, 4, 5}));
  EXPECT_EQ(
      conv3d(pattern({1, 2, 4, 5, 6}), pattern({3, 2, 2, 2, 2}), {}, 1, "valid").sizes().vec(),
      (std::vector<int64_t>{1, 3, 3, 4, 5}));
  EXPECT_EQ(conv_transpose1d(pattern({2, 4, 5}), pattern({4, 3, 3}), {}, 3, 1, 2).sizes().vec(),
            (std::vector<int64_t>{2, 3, 15}));
}

TEST(Conv2d, ErrorMessages) {
  std::string e = error_of([] { conv2d(zeros({1, 4, 5, 5}), zeros({8, 3, 3, 3})); });
  EXPECT_NE(e.find("Given groups=1, weight of size [8, 3, 3, 3], expected input [1, 4, 5, 5] to "
                   "have 3 channels, but got 4 channels instead"),
            std::string::npos)
      << e;
  e = error_of([] { conv2d(zeros({1, 3, 2, 2}), zeros({8, 3, 3, 3})); });
  EXPECT_NE(e.find("Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). "
                   "Kernel size can't be greater than actual input size"),
            std::string::npos)
      << e;
  e = error_of([] { conv2d(zeros({1, 3, 5, 5}), zeros({8, 3, 3, 3}), {}, 2, "same"); });
  EXPECT_NE(e.find("padding='same' is not supported for strided convolutions"), std::string::npos)
      << e;
  e = error_of([] { conv2d(zeros({3, 5}), zeros({8, 3, 3, 3})); });
  EXPECT_NE(e.find("conv2d: expected a 3-D (unbatched) or 4-D (batched) input"), std::string::npos)
      << e;
  e = error_of([] { conv_transpose2d(zeros({1, 2, 3, 3}), zeros({2, 3, 3, 3}), {}, 1, 0, 1); });
  EXPECT_NE(e.find("output padding must be smaller than either stride or dilation"),
            std::string::npos)
      << e;
}

TEST(Conv2d, DoubleBackwardMatchesFiniteDifferences) {
  // d/dw of sum(d loss/dx * v): exercises the derivatives of the gradient formulas.
  Tensor x = pattern({1, 2, 5, 4}).requires_grad_(true);
  Tensor w = (pattern({3, 2, 2, 2}) * 0.7).requires_grad_(true);
  Tensor v = pattern({1, 2, 5, 4}) * 0.3 + 0.1;
  auto objective = [&](const Tensor& wv, bool graph) {
    Tensor y = conv2d(x, wv, {}, 2, 1);
    Tensor l = sum_of_squares(y);
    auto g = autograd::grad({l}, {x}, {}, true, graph);
    return (g[0] * v).sum();
  };
  Tensor gw = autograd::grad({objective(w, true)}, {w})[0];
  Tensor base = w.detach().clone();
  const double eps = 1e-6;
  for (int64_t i = 0; i < base.numel(); i += 3) {
    Tensor plus = base.clone(), minus = base.clone();
    plus.data_ptr<double>()[i] += eps;
    minus.data_ptr<double>()[i] -= eps;
    const double fd = (objective(plus.requires_grad_(true), false).item<double>() -
                       objective(minus.requires_grad_(true), false).item<double>()) /
                      (2 * eps);
    EXPECT_NEAR(values(gw)[static_cast<size_t>(i)], fd, 1e-5) << "at " << i;
  }
}

}  // namespace
}  // namespace kiln
