#pragma once
// oneDNN's convolution primitives (forward, backward data, backward weights) for float32 and
// bfloat16. Primitives are cached by geometry: creating one generates code.
#include "kiln/backend/cpu/conv_geometry.h"

namespace kiln::cpu::onednn {

// Whether oneDNN has an optimised (not the reference) convolution for `dtype` on this CPU.
bool has_conv(ScalarType dtype);

// Each returns false, having computed nothing, when oneDNN has no optimised implementation.
bool conv_forward(const ConvGeometry& g, ScalarType dtype, const void* x, const void* w, void* y);
bool conv_backward_data(const ConvGeometry& g, ScalarType dtype, const void* gy, const void* w,
                        void* gx);
bool conv_backward_weight(const ConvGeometry& g, ScalarType dtype, const void* gy, const void* x,
                          void* gw);

}  // namespace kiln::cpu::onednn
