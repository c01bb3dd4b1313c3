#pragma once
// The geometry of one N-d convolution (1 to 3 spatial dims) and the three kernels every
// convolution, transposed convolution and their gradients are made of:
//   forward:         y  = conv(x, w)                x [N, C_in, in...], w [C_out, C_in/G, k...]
//   backward_data:   gx = conv(x, w)^T applied to gy (shape of x; what a transposed conv computes)
//   backward_weight: gw = d<y, gy>/dw for input x
// Padding is `pad` on the low side of each spatial dim; the high side is whatever the in/out
// sizes imply (possibly less than `pad`: a transposed conv's output_padding).
// All buffers are contiguous (row-major).
#include <cstdint>

#include "kiln/core/dtype.h"

namespace kiln::cpu {

struct ConvGeometry {
  int nd = 2;  // spatial dims
  int64_t batch = 1, in_channels = 1, out_channels = 1, groups = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dilation[3] = {1, 1, 1};

  int64_t in_numel() const { return in[0] * in[1] * in[2]; }
  int64_t out_numel() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_numel() const { return kernel[0] * kernel[1] * kernel[2]; }
  // Padding on the high side of dim d that the sizes imply.
  int64_t pad_high(int d) const {
    return (out[d] - 1) * stride[d] + (kernel[d] - 1) * dilation[d] + 1 - in[d] - pad[d];
  }
  bool operator==(const ConvGeometry&) const = default;
};

// float32 or float64 buffers. float32 goes through oneDNN where it has an implementation, the
// rest (and float64) through im2col + gemm.
void conv_forward(const ConvGeometry& g, ScalarType dtype, const void* x, const void* w, void* y);
void conv_backward_data(const ConvGeometry& g, ScalarType dtype, const void* gy, const void* w,
                        void* gx);
void conv_backward_weight(const ConvGeometry& g, ScalarType dtype, const void* gy, const void* x,
                          void* gw);

// The im2col + gemm implementations (float32, float64), always available.
namespace im2col {
void forward(const ConvGeometry& g, ScalarType dtype, const void* x, const void* w, void* y);
void backward_data(const ConvGeometry& g, ScalarType dtype, const void* gy, const void* w,
                   void* gx);
void backward_weight(const ConvGeometry& g, ScalarType dtype, const void* gy, const void* x,
                     void* gw);
}  // namespace im2col

}  // namespace kiln::cpu
