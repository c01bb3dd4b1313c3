#pragma once
// libtorch's tags for modes given as strings in Kiln's options: torch::kBilinear, torch::kReflect,
// ... Each is a constant of its own type in kiln::enumtype that converts to the mode's name, so
//   F::InterpolateFuncOptions().mode(torch::kBilinear)  and  .mode("bilinear")
//   F::PadFuncOptions({1, 1}).mode(torch::kReflect)     and  .mode("reflect")
// both compile. Also the nonlinearities nn::init takes (torch::kReLU, ...); torch::kLinear is both
// a nonlinearity and an interpolation mode. The reductions (kMean, kSum, kNone) are in
// kiln/nn/options/loss.h.
#include <string>

namespace kiln {

enum class Nonlinearity {
  Linear,
  Conv1D,
  Conv2D,
  Conv3D,
  ConvTranspose1D,
  ConvTranspose2D,
  ConvTranspose3D,
  Sigmoid,
  Tanh,
  ReLU,
  LeakyReLU,
  SELU
};
inline constexpr Nonlinearity kConv1D = Nonlinearity::Conv1D;
inline constexpr Nonlinearity kConv2D = Nonlinearity::Conv2D;
inline constexpr Nonlinearity kConv3D = Nonlinearity::Conv3D;
inline constexpr Nonlinearity kSigmoid = Nonlinearity::Sigmoid;
inline constexpr Nonlinearity kTanh = Nonlinearity::Tanh;
inline constexpr Nonlinearity kReLU = Nonlinearity::ReLU;
inline constexpr Nonlinearity kLeakyReLU = Nonlinearity::LeakyReLU;
inline constexpr Nonlinearity kSELU = Nonlinearity::SELU;

#define KILN_MODE_TAG(Tag, name)                               \
  namespace enumtype {                                         \
  struct Tag {                                                 \
    operator std::string() const { return name; } /* NOLINT */ \
  };                                                           \
  }                                                            \
  inline constexpr enumtype::Tag Tag {}

// interpolate and Upsample
KILN_MODE_TAG(kNearest, "nearest");
KILN_MODE_TAG(kNearestExact, "nearest-exact");
KILN_MODE_TAG(kBilinear, "bilinear");
KILN_MODE_TAG(kBicubic, "bicubic");
KILN_MODE_TAG(kTrilinear, "trilinear");
KILN_MODE_TAG(kArea, "area");
// pad and the convolutions' padding_mode
KILN_MODE_TAG(kConstant, "constant");
KILN_MODE_TAG(kReflect, "reflect");
KILN_MODE_TAG(kReplicate, "replicate");
KILN_MODE_TAG(kCircular, "circular");
KILN_MODE_TAG(kZeros, "zeros");
// grid_sample's padding_mode (with kZeros)
KILN_MODE_TAG(kBorder, "border");
KILN_MODE_TAG(kReflection, "reflection");
#undef KILN_MODE_TAG

namespace enumtype {
struct kLinear {
  constexpr operator Nonlinearity() const { return Nonlinearity::Linear; }  // NOLINT
  operator std::string() const { return "linear"; }                         // NOLINT
};
}  // namespace enumtype
inline constexpr enumtype::kLinear kLinear{};

}  // namespace kiln
