#pragma once
// F::grid_sample and F::affine_grid (libtorch's <torch/nn/functional/vision.h>): 2-d only.
#include "kiln/core/tensor.h"
#include "kiln/nn/options/vision.h"

namespace kiln::nn::functional {

// input [N, C, H, W] read at grid [N, OH, OW, 2] ((x, y) in [-1, 1]) -> [N, C, OH, OW].
Tensor grid_sample(const Tensor& input, const Tensor& grid,
                   const GridSampleFuncOptions& options = {});
// The sampling grid [N, H, W, 2] of the affine maps theta [N, 2, 3], for size [N, C, H, W].
Tensor affine_grid(const Tensor& theta, IntArrayRef size, bool align_corners = false);

}  // namespace kiln::nn::functional
