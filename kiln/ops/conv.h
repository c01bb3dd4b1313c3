#pragma once
// Convolution, pooling, upsampling and pixel shuffle with ATen's names and argument orders.
// Inputs are batched (N, C, spatial...) or unbatched (C, spatial...) as in PyTorch. A one-element
// stride/padding/dilation/kernel list applies to every spatial dim.
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln {

// ---- convolution (ops/conv*.cpp) ----
// The general form every conv function calls (ATen's `convolution`): input [N, C_in, *],
// weight [C_out, C_in/groups, k...] or, transposed, [C_in, C_out/groups, k...].
Tensor convolution(const Tensor& input, const Tensor& weight, const Tensor& bias,
                   IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                   IntArrayRef output_padding, int64_t groups);

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef dilation = 1,
              int64_t groups = 1);
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef dilation = 1,
              int64_t groups = 1);
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef dilation = 1,
              int64_t groups = 1);
// padding "valid" (none) or "same" (output size = input size; stride must be 1). An even
// effective kernel puts the extra padding on the high side, as PyTorch does. (Templates so that
// a literal 0 or a braced list picks the integer overloads above.)
namespace detail {
Tensor conv_padding_mode(int64_t nd, const Tensor& input, const Tensor& weight, const Tensor& bias,
                         IntArrayRef stride, std::string_view padding, IntArrayRef dilation,
                         int64_t groups);
template <class S>
concept PaddingString =
    std::is_convertible_v<const S&, std::string_view> && !std::is_arithmetic_v<S>;
}  // namespace detail
template <detail::PaddingString S>
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              const S& padding, IntArrayRef dilation = 1, int64_t groups = 1) {
  return detail::conv_padding_mode(1, input, weight, bias, stride, padding, dilation, groups);
}
template <detail::PaddingString S>
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              const S& padding, IntArrayRef dilation = 1, int64_t groups = 1) {
  return detail::conv_padding_mode(2, input, weight, bias, stride, padding, dilation, groups);
}
template <detail::PaddingString S>
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              const S& padding, IntArrayRef dilation = 1, int64_t groups = 1) {
  return detail::conv_padding_mode(3, input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        IntArrayRef stride = 1, IntArrayRef padding = 0,
                        IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        IntArrayRef stride = 1, IntArrayRef padding = 0,
                        IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        IntArrayRef stride = 1, IntArrayRef padding = 0,
                        IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);

// ---- pooling (ops/pool*.cpp) ----
// An empty stride means stride = kernel_size.
Tensor max_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = 0, IntArrayRef dilation = 1, bool ceil_mode = false);
Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = 0, IntArrayRef dilation = 1, bool ceil_mode = false);
Tensor max_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = 0, IntArrayRef dilation = 1, bool ceil_mode = false);
// (values, indices); indices are flat offsets into each input plane (H * W, or D * H * W), as in
// PyTorch.
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                   IntArrayRef dilation = 1,
                                                   bool ceil_mode = false);
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                   IntArrayRef dilation = 1,
                                                   bool ceil_mode = false);
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                   IntArrayRef dilation = 1,
                                                   bool ceil_mode = false);

Tensor avg_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = 0, bool ceil_mode = false, bool count_include_pad = true);
Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = 0, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor avg_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = 0, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);

Tensor adaptive_avg_pool1d(const Tensor& input, IntArrayRef output_size);
Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size);
Tensor adaptive_avg_pool3d(const Tensor& input, IntArrayRef output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool1d(const Tensor& input, IntArrayRef output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool3d(const Tensor& input, IntArrayRef output_size);

// Max unpooling (kiln/ops/pool/unpool.cpp): self [N, C, <in>] (or [C, <in>]) written at the flat
// per-plane indices of max pooling into zeros [N, C, <output_size>].
Tensor max_unpool2d(const Tensor& self, const Tensor& indices, IntArrayRef output_size);
Tensor max_unpool3d(const Tensor& self, const Tensor& indices, IntArrayRef output_size,
                    IntArrayRef stride, IntArrayRef padding);

// ---- grid sampling (ops/grid_sample.cpp) ----
// input [N, C, H, W] read at grid [N, OH, OW, 2] ((x, y) in [-1, 1]) -> [N, C, OH, OW];
// interpolation_mode 0 bilinear, 1 nearest; padding_mode 0 zeros, 1 border, 2 reflection.
Tensor grid_sampler(const Tensor& input, const Tensor& grid, int64_t interpolation_mode,
                    int64_t padding_mode, bool align_corners);
Tensor grid_sampler_2d(const Tensor& input, const Tensor& grid, int64_t interpolation_mode,
                       int64_t padding_mode, bool align_corners);
// The grid [N, H, W, 2] of the affine maps theta [N, 2, 3] for size [N, C, H, W].
Tensor affine_grid_generator(const Tensor& theta, IntArrayRef size, bool align_corners);

// ---- upsampling and pixel shuffle (ops/upsample.cpp) ----
// input [N, C, H, W] (or [C, H, W]); output_size {OH, OW}.
Tensor upsample_nearest2d(const Tensor& input, IntArrayRef output_size);
Tensor upsample_bilinear2d(const Tensor& input, IntArrayRef output_size, bool align_corners);
// mode "nearest", "bilinear" (4-D input) or "linear" (3-D input [N, C, L]); exactly one of
// size and scale_factor is given.
Tensor interpolate(const Tensor& input, std::optional<std::vector<int64_t>> size,
                   std::optional<std::vector<double>> scale_factor = std::nullopt,
                   const std::string& mode = "nearest",
                   std::optional<bool> align_corners = std::nullopt);

Tensor pixel_shuffle(const Tensor& input, int64_t upscale_factor);
Tensor pixel_unshuffle(const Tensor& input, int64_t downscale_factor);

}  // namespace kiln
