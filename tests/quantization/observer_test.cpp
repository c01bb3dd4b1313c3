// Kiln's observers choose PyTorch's quantization parameters (observer_expected.h, written by
// torch.ao.quantization's observers for the same input).
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "kiln/quantization/observer.h"
#include "tests/quantization/observer_expected.h"

namespace kiln::quantization {
namespace {

namespace expected = observer_expected;

Tensor input() { return tensor(expected::kInput); }

void expect_qparams(const QParams& p, const expected::Case& want, double rtol = 1e-6) {
  const Tensor scale = p.scale.to(kFloat64).flatten(), zp = p.zero_point.flatten();
  ASSERT_EQ(scale.numel(), static_cast<int64_t>(want.scales.size()));
  for (int64_t i = 0; i < scale.numel(); ++i) {
    EXPECT_NEAR(scale[i].item<double>(), want.scales[i], rtol * want.scales[i]) << "scale " << i;
    EXPECT_EQ(zp[i].item<int64_t>(), want.zero_points[i]) << "zero point " << i;
  }
}

TEST(Observer, MinMaxAffineAndSymmetric) {
  MinMaxObserver affine(ObserverOptions().dtype(kQUInt8));
  affine(input());
  expect_qparams(affine.calculate_qparams(), expected::minmax_affine_quint8);
  MinMaxObserver symmetric(ObserverOptions().dtype(kQInt8).qscheme(kPerTensorSymmetric));
  symmetric(input());
  expect_qparams(symmetric.calculate_qparams(), expected::minmax_symmetric_qint8);
  MinMaxObserver reduced(ObserverOptions().dtype(kQUInt8).reduce_range(true));
  reduced(input());
  EXPECT_EQ(reduced.quant_max(), 127);
  expect_qparams(reduced.calculate_qparams(), expected::minmax_reduce_range);
}

TEST(Observer, MovingAverageMovesTowardsEachBatch) {
  MovingAverageMinMaxObserver o(ObserverOptions().dtype(kQUInt8));
  const Tensor x = input();
  o(x.slice(0, 0, 256));
  o(x.slice(0, 256, 512));
  expect_qparams(o.calculate_qparams(), expected::moving_average);
}

TEST(Observer, PerChannelAlongEitherAxis) {
  PerChannelMinMaxObserver rows;
  rows(input().reshape({8, 64}));
  expect_qparams(rows.calculate_qparams(), expected::per_channel_symmetric);
  PerChannelMinMaxObserver columns(
      ObserverOptions().dtype(kQUInt8).qscheme(kPerChannelAffine).ch_axis(1));
  columns(input().reshape({64, 8}));
  expect_qparams(columns.calculate_qparams(), expected::per_channel_affine_axis1);
}

TEST(Observer, HistogramChoosesTheRangeOfLeastError) {
  HistogramObserver o(ObserverOptions().dtype(kQUInt8).reduce_range(true));
  o(input());
  expect_qparams(o.calculate_qparams(), expected::histogram_x86, 1e-4);
  // Its histogram holds every value once.
  double total = 0;
  for (double c : o.histogram()) total += c;
  EXPECT_EQ(total, 512);
}

TEST(Observer, HistogramWidensItsRangeAndKeepsItsMass) {
  HistogramObserver h(ObserverOptions().bins(64));
  h(rand({1000}));              // [0, 1)
  h(rand({500}) * 10.0 - 5.0);  // [-5, 5): the range widens, the old mass is rebinned
  EXPECT_LE(h.min_val().item<float>(), -4.9f);
  EXPECT_GE(h.max_val().item<float>(), 4.9f);
  double total = 0, middle = 0;
  for (size_t b = 0; b < h.histogram().size(); ++b) {
    total += h.histogram()[b];
    if (b >= 30 && b < 40) middle += h.histogram()[b];  // [-0.31, 1.25)
  }
  EXPECT_EQ(total, 1500);
  // The first batch's values stayed where they were, with ~80 of the second's.
  EXPECT_GE(middle, 1000);
  EXPECT_LE(middle, 1160);
}

TEST(Observer, NothingObservedGivesTorchsDefaultAndErrorsNameTheProblem) {
  MinMaxObserver o;
  const QParams p = o.calculate_qparams();
  EXPECT_EQ(p.scale.item<float>(), 1.0f);
  EXPECT_EQ(p.zero_point.item<int64_t>(), 0);
  // A constant input: the range is [0, 2] (it always holds 0); NaN and infinities are not counted.
  HistogramObserver constant;
  Tensor c = full({100}, 2.0f);
  c[0].fill_(std::numeric_limits<float>::quiet_NaN());
  c[1].fill_(std::numeric_limits<float>::infinity());
  constant(c);
  EXPECT_FLOAT_EQ(constant.calculate_qparams().scale.item<float>(), 2.0f / 255);
  EXPECT_EQ(constant.histogram()[0], 98);
  EXPECT_THROW(MinMaxObserver(ObserverOptions().dtype(kFloat32)), Error);
  EXPECT_THROW(PerChannelMinMaxObserver(ObserverOptions().qscheme(kPerTensorAffine)), Error);
  EXPECT_THROW(o(ones({2}, kInt64)), Error);
  PerChannelMinMaxObserver pc(PerChannelMinMaxObserver::default_options().ch_axis(3));
  EXPECT_THROW(pc(ones({2, 2})), Error);
}

}  // namespace
}  // namespace kiln::quantization
