#pragma once
// Options of F::grid_sample (kiln/nn/functional/vision.h), as libtorch's
// <torch/nn/options/vision.h>:
//   F::grid_sample(x, grid, F::GridSampleFuncOptions().mode(torch::kNearest)
//                                .padding_mode(torch::kBorder).align_corners(true))
#include <optional>
#include <string>

#include "kiln/core/arg.h"
#include "kiln/nn/options/modes.h"

namespace kiln::nn::functional {

struct GridSampleFuncOptions {
  KILN_ARG(std::string, mode) = "bilinear";       // "bilinear" or "nearest" (kBilinear, ...)
  KILN_ARG(std::string, padding_mode) = "zeros";  // "zeros", "border" or "reflection"
  KILN_ARG(std::optional<bool>, align_corners) = std::nullopt;  // unset: false
};

}  // namespace kiln::nn::functional
