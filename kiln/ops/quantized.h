#pragma once
// Quantization (docs/quantization.md). Quantized tensors (dtype qint8, quint8, qint32) carry a
// scale and zero point (kiln/core/quantizer.h); real value = (q - zero_point) * scale.
#include "kiln/core/quantizer.h"

namespace kiln {

// torch.quantize_per_tensor / quantize_per_channel: round(x / scale) + zero_point, clamped to
// the dtype's range (NaN becomes the zero point). scales are real, zero_points integers, one
// per index along `axis`.
Tensor quantize_per_tensor(const Tensor& self, double scale, int64_t zero_point, ScalarType dtype);
Tensor quantize_per_channel(const Tensor& self, const Tensor& scales, const Tensor& zero_points,
                            int64_t axis, ScalarType dtype);
// Real values (float32) of a quantized tensor; a float tensor is returned as it is.
Tensor dequantize(const Tensor& self);
// The stored integers (int8, uint8 or int32), copied.
Tensor int_repr(const Tensor& self);

// The registry's quantized ops (PyTorch 2's decomposed ones): integers and their parameters as
// separate arguments, plain dtypes throughout. quant_min/quant_max narrow the range (an
// observer's reduce_range); dtype is the integer type stored (int8, uint8, int32).
Tensor quantize_per_tensor_affine(const Tensor& self, double scale, int64_t zero_point,
                                  int64_t quant_min, int64_t quant_max, ScalarType dtype);
Tensor dequantize_per_tensor_affine(const Tensor& self, double scale, int64_t zero_point);
Tensor quantize_per_channel_affine(const Tensor& self, const Tensor& scales,
                                   const Tensor& zero_points, int64_t axis, int64_t quant_min,
                                   int64_t quant_max, ScalarType dtype);
Tensor dequantize_per_channel_affine(const Tensor& self, const Tensor& scales,
                                     const Tensor& zero_points, int64_t axis);

// int8 products with float32 results, on oneDNN (VNNI where the CPU has it):
//   (input - input_zero_point) * input_scale  @  (weight * weight_scales[n])^T  + bias
// input uint8 [*, in_features], weight int8 [out_features, in_features] (symmetric: zero point
// 0), weight_scales [out_features], bias float32 [out_features] or undefined.
Tensor int8_linear(const Tensor& input, double input_scale, int64_t input_zero_point,
                   const Tensor& weight, const Tensor& weight_scales, const Tensor& bias = {});
// The same for conv2d: input uint8 [N, C, H, W], weight int8 [O, C / groups, kh, kw].
Tensor int8_conv2d(const Tensor& input, double input_scale, int64_t input_zero_point,
                   const Tensor& weight, const Tensor& weight_scales, const Tensor& bias = {},
                   IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef dilation = 1,
                   int64_t groups = 1);

}  // namespace kiln
