#include "kiln/nn/functional/vision.h"

#include "kiln/ops/conv.h"
#include "kiln/ops/ops.h"

namespace kiln::nn::functional {

Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleFuncOptions& options) {
  const std::string& mode = options.mode();
  const std::string& padding = options.padding_mode();
  KILN_CHECK(mode == "bilinear" || mode == "nearest",
             "grid_sample: mode must be \"bilinear\" or \"nearest\", got \"", mode, "\"");
  KILN_CHECK(padding == "zeros" || padding == "border" || padding == "reflection",
             "grid_sample: padding_mode must be \"zeros\", \"border\" or \"reflection\", got \"",
             padding, "\"");
  const int64_t interpolation = mode == "bilinear" ? 0 : 1;
  const int64_t padding_mode = padding == "zeros" ? 0 : padding == "border" ? 1 : 2;
  return grid_sampler(input, grid, interpolation, padding_mode,
                      options.align_corners().value_or(false));
}

Tensor affine_grid(const Tensor& theta, IntArrayRef size, bool align_corners) {
  return affine_grid_generator(theta, size, align_corners);
}

}  // namespace kiln::nn::functional
