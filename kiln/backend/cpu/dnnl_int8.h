#pragma once
// oneDNN's int8 primitives with float32 results: uint8 activations times int8 weights, summed in
// int32 (VPDPBUSD on CPUs with VNNI), then scaled per output channel:
//   y[.., n] = scales[n] * (sum of x * w over the reduced dims + bias[n])
// Callers fold zero points and real-valued bias into `bias` (kiln/ops/quantized). Primitives are
// cached by shape. Each returns false, having computed nothing, when oneDNN has only its
// reference implementation.
#include <cstdint>

#include "kiln/backend/cpu/conv_geometry.h"

namespace kiln::cpu::onednn {

// x [m, k] and w [n, k] row-major, y [m, n] row-major.
bool int8_linear(int64_t m, int64_t n, int64_t k, const uint8_t* x, const int8_t* w,
                 const float* scales, const float* bias, float* y);

// x [N, C_in, in...], w [C_out, C_in / G, k...], y [N, C_out, out...], all contiguous; g.pad must
// be zero (callers pad with the zero point).
bool int8_conv(const ConvGeometry& g, const uint8_t* x, const int8_t* w, const float* scales,
               const float* bias, float* y);

}  // namespace kiln::cpu::onednn
