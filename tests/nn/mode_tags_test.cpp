// libtorch's mode tags (torch::kBilinear, torch::kReflect, ...; kiln/nn/options/modes.h) select the
// same modes as their names in interpolate, pad, Upsample and the convolutions' padding_mode.
// Expected values from PyTorch 2.x (torch.nn.functional.interpolate / pad).
#include <gtest/gtest.h>

#include "kiln/kiln.h"

namespace kiln {
namespace {

namespace F = nn::functional;

std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

TEST(ModeTags, Interpolate) {
  const Tensor x = arange(4, kFloat32).view({1, 1, 2, 2});
  const Tensor bilinear = F::interpolate(x, F::InterpolateFuncOptions()
                                                .size(std::vector<int64_t>{3, 3})
                                                .mode(kBilinear)
                                                .align_corners(false));
  EXPECT_EQ(values(bilinear), (std::vector<double>{0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3}));
  const Tensor nearest = F::interpolate(
      x, F::InterpolateFuncOptions().size(std::vector<int64_t>{3, 3}).mode(kNearest));
  EXPECT_EQ(values(nearest), (std::vector<double>{0, 0, 1, 0, 0, 1, 2, 2, 3}));
  // The string spelling still works and agrees.
  EXPECT_TRUE(F::interpolate(x, F::InterpolateFuncOptions()
                                    .size(std::vector<int64_t>{3, 3})
                                    .mode("bilinear")
                                    .align_corners(false))
                  .equal(bilinear));
  const Tensor line = arange(3, kFloat32).view({1, 1, 3});
  const Tensor linear = F::interpolate(line, F::InterpolateFuncOptions()
                                                 .scale_factor(std::vector<double>{2})
                                                 .mode(kLinear)
                                                 .align_corners(true));
  EXPECT_TRUE(linear.allclose(tensor({0.0f, 0.4f, 0.8f, 1.2f, 1.6f, 2.0f}).view({1, 1, 6})))
      << linear;
  // Modes Kiln's interpolate lacks compile and fail clearly.
  EXPECT_THROW(F::interpolate(
                   x, F::InterpolateFuncOptions().size(std::vector<int64_t>{3, 3}).mode(kBicubic)),
               Error);
  nn::Upsample up(
      nn::UpsampleOptions().scale_factor(std::vector<double>{1.5, 1.5}).mode(kBilinear));
  EXPECT_EQ(values(up->forward(x)), values(bilinear));
}

TEST(ModeTags, Pad) {
  const Tensor row = tensor({1.0, 2.0, 3.0}).view({1, 1, 3});
  EXPECT_EQ(values(F::pad(row, F::PadFuncOptions({2, 1}).mode(kReflect))),
            (std::vector<double>{3, 2, 1, 2, 3, 2}));
  EXPECT_EQ(values(F::pad(row, F::PadFuncOptions({2, 1}).mode(kReplicate))),
            (std::vector<double>{1, 1, 1, 2, 3, 3}));
  EXPECT_EQ(values(F::pad(row, F::PadFuncOptions({2, 1}).mode(kConstant).value(9))),
            (std::vector<double>{9, 9, 1, 2, 3, 9}));
  const Tensor img = arange(6, kFloat32).view({1, 1, 2, 3});
  EXPECT_EQ(values(F::pad(img, F::PadFuncOptions({1, 1, 1, 0}).mode(kReflect))),
            (std::vector<double>{4, 3, 4, 5, 4, 1, 0, 1, 2, 1, 4, 3, 4, 5, 4}));
}

TEST(ModeTags, ConvPaddingModeAndInitGain) {
  nn::Conv1d conv(nn::Conv1dOptions(1, 1, 3).padding(1).bias(false).padding_mode(kReplicate));
  EXPECT_EQ(conv->options.padding_mode(), "replicate");
  {
    NoGradGuard no_grad;
    conv->weight.fill_(1);
  }
  // replicate-padded [1, 2, 3] is [1, 1, 2, 3, 3]: window sums 4, 6, 8.
  EXPECT_EQ(values(conv->forward(tensor({1.0f, 2.0f, 3.0f}).view({1, 1, 3}))),
            (std::vector<double>{4, 6, 8}));
  EXPECT_EQ(nn::Conv2dOptions(1, 1, 3).padding_mode(kZeros).padding_mode(), "zeros");
  EXPECT_EQ(nn::Conv2dOptions(1, 1, 3).padding_mode(kCircular).padding_mode(), "circular");
  // kLinear is also a nonlinearity.
  EXPECT_EQ(nn::init::calculate_gain(kLinear), 1.0);
  EXPECT_EQ(nn::init::calculate_gain(kReLU), std::sqrt(2.0));
}

}  // namespace
}  // namespace kiln
