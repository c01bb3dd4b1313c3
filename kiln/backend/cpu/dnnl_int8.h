#pragma once
// oneDNN's int8 primitives with float32 results: uint8 activations times int8 weights, summed in
// int32 (VPDPBUSD on CPUs with VNNI), then scaled per output channel:
//   y[.., n] = scales[n] * (sum of x * w over the reduced dims + bias[n])
// Primitives are cached by shape and scales. Each returns false, having computed nothing, when
// oneDNN has only its reference implementation.
#include <cstdint>

#include "kiln/backend/cpu/conv_geometry.h"

namespace kiln::cpu::onednn {

// x [m, k] with zero point x_zero_point and w [n, k] row-major, y [m, n] row-major:
// y = scales[n] * (sum (x - zp) * w + bias[n]).
bool int8_linear(int64_t m, int64_t n, int64_t k, const uint8_t* x, int32_t x_zero_point,
                 const int8_t* w, const float* scales, const float* bias, float* y);

// x [N, C_in, H, W] with zero point x_zero_point (padding holds it), w [C_out, C_in / G, kh,
// kw], y [N, C_out, oh, ow], all contiguous: y = scales[n] * (sum (x - zp) * w + bias[n]).
bool int8_conv(const ConvGeometry& g, const uint8_t* x, int32_t x_zero_point, const int8_t* w,
               const float* scales, const float* bias, float* y);

}  // namespace kiln::cpu::onednn
