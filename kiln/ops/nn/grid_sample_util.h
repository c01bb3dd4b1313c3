#pragma once
// Shared by the grid_sampler_2d entries (grid_sample.cpp) and their op-table samples and float64
// references (grid_sample_reference.cpp).
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln::grid {

// ATen's integer modes.
constexpr int64_t kBilinearMode = 0, kNearestMode = 1;
constexpr int64_t kZerosPadding = 0, kBorderPadding = 1, kReflectionPadding = 2;

// grid_sampler_2d attrs: interpolation_mode, padding_mode, align_corners.
struct GridMode {
  int64_t interpolation, padding;
  bool align_corners;
};
inline GridMode grid_mode(const Attrs& a) { return {a.i(0), a.i(1), a.b(2)}; }

// [N, C, OH, OW] of input [N, C, H, W] and grid [N, OH, OW, 2].
inline SymShape sampled_sizes(const Tensor& input, const Tensor& grid) {
  return {input.sym_size(0), input.sym_size(1), grid.sym_size(1), grid.sym_size(2)};
}

std::vector<OpSample> forward_samples(ScalarType dtype);
std::vector<OpErrorSample> forward_error_samples();
std::vector<Tensor> forward_reference(const std::vector<Tensor>& in, const Attrs& a);
// (grad_input, grad_grid) of grid_sampler_2d_backward(grad, input, grid).
std::vector<Tensor> backward_reference(const std::vector<Tensor>& in, const Attrs& a);
std::vector<OpSample> backward_samples(ScalarType dtype);
std::vector<OpErrorSample> backward_error_samples();

}  // namespace kiln::grid
