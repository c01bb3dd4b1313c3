// ctc_loss: values and gradients from PyTorch 2.x (torch.nn.functional.ctc_loss), target
// layouts, zero_infinity, unbatched input, the gradient through log_softmax against finite
// differences, and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/kiln.h"
#include "kiln/ops/ctc.h"
#include "tests/nn/conv_pool_test_util.h"

namespace kiln {
namespace {

using testing::error_of;
using testing::expect_values;
using testing::values;

Tensor ints(const std::vector<int64_t>& v) { return tensor(v); }

// sin(i * a + b) for i = 0, 1, ... in float64, as the PyTorch script generates its inputs.
Tensor sines(std::vector<int64_t> shape, double a, double b) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(std::sin(static_cast<double>(i) * a + b));
  return tensor(v, kFloat64).view(shape);
}

// T=5, N=2, C=4; targets [[1, 2, 2], [3, 1, _]], input lengths [5, 4], target lengths [3, 2].
struct Case {
  Tensor log_probs = sines({5, 2, 4}, 0.37, 0.0).log_softmax(2);
  Tensor targets = ints({1, 2, 2, 3, 1, 0}).view({2, 3});
  Tensor input_lengths = ints({5, 4});
  Tensor target_lengths = ints({3, 2});
};

TEST(CtcLoss, PerSampleAndMeanMatchPyTorch) {
  Case c;
  Tensor none =
      ctc_loss(c.log_probs, c.targets, c.input_lengths, c.target_lengths, 0, Reduction::None);
  expect_values(none, {4.8693974136, 2.8704047218}, 1e-9);
  Tensor mean = ctc_loss(c.log_probs, c.targets, c.input_lengths, c.target_lengths);
  EXPECT_NEAR(mean.item<double>(), 1.5291674161, 1e-9);
  Tensor sum =
      ctc_loss(c.log_probs, c.targets, c.input_lengths, c.target_lengths, 0, Reduction::Sum);
  EXPECT_NEAR(sum.item<double>(), 4.8693974136 + 2.8704047218, 1e-9);
}

TEST(CtcLoss, MeanGradientMatchesPyTorch) {
  Case c;
  Tensor lp = c.log_probs.detach().requires_grad_(true);
  ctc_loss(lp, c.targets, c.input_lengths, c.target_lengths).backward();
  expect_values(lp.grad(),
                {-0.0017450178, -0.1056370454, 0.0477713089,  0.0596107544,  -0.0412683369,
                 0.0708381143,  0.0600806281,  -0.0896504056, 0.0110406909,  -0.0184431274,
                 -0.0170157105, 0.024418147,   0.0051229629,  0.0181320448,  0.0612029756,
                 -0.0844579833, 0.0003545992,  0.0327419025,  -0.0972414727, 0.064144971,
                 0.0011122689,  -0.0726182898, 0.0653564299,  0.006149591,   -0.0917105907,
                 0.0463586922,  0.0225483538,  0.0228035446,  -0.0185440704, -0.1027666838,
                 0.0574739718,  0.0638367824,  0.0200481205,  0.0318829962,  -0.1176401575,
                 0.0657090408,  0.0,           0.0,           0.0,           0.0},
                1e-9);
}

TEST(CtcLoss, ConcatenatedTargetsAndLengthListsAgreeWithPadded) {
  Case c;
  const std::vector<double> padded = values(
      ctc_loss(c.log_probs, c.targets, c.input_lengths, c.target_lengths, 0, Reduction::None));
  Tensor flat = ints({1, 2, 2, 3, 1});
  expect_values(ctc_loss(c.log_probs, flat, std::vector<int64_t>{5, 4}, std::vector<int64_t>{3, 2},
                         0, Reduction::None),
                padded, 1e-12);
  // int32 targets and lengths.
  expect_values(ctc_loss(c.log_probs, flat.to(kInt32), c.input_lengths.to(kInt32),
                         c.target_lengths.to(kInt32), 0, Reduction::None),
                padded, 1e-12);
}

TEST(CtcLoss, LastClassBlankAndZeroInfinityMatchPyTorch) {
  // Targets [0, 1, 1] (needs 4 steps), [1, 1, 1] (needs 5, has 4: impossible), [] (blanks only).
  Tensor x = sines({4, 3, 3}, 0.53, 0.2).requires_grad_(true);
  Tensor targets = ints({0, 1, 1, 1, 1, 1, 0, 0, 0}).view({3, 3});
  Tensor il = ints({4, 4, 3}), tl = ints({3, 3, 0});
  std::vector<double> none =
      values(ctc_loss(x.log_softmax(2), targets, il, tl, 2, Reduction::None));
  EXPECT_NEAR(none[0], 5.2924715792, 1e-9);
  EXPECT_EQ(none[1], std::numeric_limits<double>::infinity());
  EXPECT_NEAR(none[2], 3.869941803, 1e-9);
  Tensor sum = ctc_loss(x.log_softmax(2), targets, il, tl, 2, Reduction::Sum, true);
  EXPECT_NEAR(sum.item<double>(), 9.1624133821, 1e-9);
  sum.backward();
  // The gradient w.r.t. the logits: sample 1 (infinite) gets none, sample 2 none after t = 3.
  expect_values(
      x.grad(),
      {-0.7881971587, 0.3382739778, 0.4499231809,  0.0,          0.0,           0.0,
       0.4727265646,  0.2987722213, -0.7714987858, 0.2300909756, -0.7011517763, 0.4710608007,
       0.0,           0.0,          0.0,           0.4479733771, 0.3390124435,  -0.7869858205,
       0.4637119962,  0.2992181097, -0.7629301059, 0.0,          0.0,           0.0,
       0.2256655385,  0.3457774508, -0.5714429893, 0.4578372218, -0.6648417368, 0.2070045149,
       0.0,           0.0,          0.0,           0.0,          0.0,           0.0},
      1e-9);
}

TEST(CtcLoss, GradientThroughLogSoftmaxMatchesFiniteDifferences) {
  // PyTorch's formula folds in log_softmax, so the true derivative is checked w.r.t. logits.
  Tensor logits = sines({5, 2, 4}, 0.61, 0.3);
  Case c;
  auto loss = [&](const Tensor& x) {
    return ctc_loss(x.log_softmax(2), c.targets, c.input_lengths, c.target_lengths);
  };
  Tensor x = logits.clone().requires_grad_(true);
  loss(x).backward();
  const std::vector<double> g = values(x.grad());
  const double eps = 1e-6;
  for (int64_t i = 0; i < logits.numel(); ++i) {
    Tensor plus = logits.clone(), minus = logits.clone();
    plus.data_ptr<double>()[i] += eps;
    minus.data_ptr<double>()[i] -= eps;
    const double fd = (loss(plus).item<double>() - loss(minus).item<double>()) / (2 * eps);
    EXPECT_NEAR(g[static_cast<size_t>(i)], fd, 1e-7) << "at " << i;
  }
}

TEST(CtcLoss, UnbatchedAndFloat32AgreeWithBatchedFloat64) {
  Case c;
  Tensor lp0 = c.log_probs.select(1, 0);
  Tensor unbatched = ctc_loss(lp0, ints({1, 2, 2}), ints({5}), ints({3}), 0, Reduction::None);
  EXPECT_EQ(unbatched.dim(), 0);
  EXPECT_NEAR(unbatched.item<double>(), 4.8693974136, 1e-9);
  Tensor f32 = ctc_loss(c.log_probs.to(kFloat32), c.targets, c.input_lengths, c.target_lengths);
  EXPECT_EQ(f32.dtype(), kFloat32);
  EXPECT_NEAR(values(f32)[0], 1.5291674161, 1e-5);
}

TEST(CtcLoss, ErrorMessages) {
  Case c;
  std::string e = error_of([&] {
    ctc_loss(c.log_probs, c.targets, c.input_lengths, c.target_lengths, 4, Reduction::None);
  });
  EXPECT_NE(e.find("blank must be in label range"), std::string::npos) << e;
  e = error_of([&] { ctc_loss(c.log_probs, c.targets, ints({6, 4}), c.target_lengths); });
  EXPECT_NE(e.find("Expected input_lengths to have value at most 5, but got value 6"),
            std::string::npos)
      << e;
  e = error_of([&] { ctc_loss(c.log_probs, c.targets, c.input_lengths, ints({4, 2})); });
  EXPECT_NE(e.find("Expected tensor to have size at least 4 at dimension 1, but got size 3"),
            std::string::npos)
      << e;
  e = error_of([&] { ctc_loss(c.log_probs, c.targets, ints({5}), c.target_lengths); });
  EXPECT_NE(e.find("input_lengths must be of size batch_size"), std::string::npos) << e;
}

}  // namespace
}  // namespace kiln
