// Picks oneDNN or im2col for each convolution kernel. A bfloat16 geometry oneDNN has no
// optimised kernel for runs through im2col on float32 copies.
#include <vector>

#include "kiln/backend/cpu/conv_geometry.h"
#include "kiln/backend/cpu/dnnl_conv.h"
#include "kiln/core/half.h"

namespace kiln::cpu {
namespace {

// Element counts of the activations x [N, C_in, in...], y [N, C_out, out...] and weights.
int64_t x_numel(const ConvGeometry& g) { return g.batch * g.in_channels * g.in_numel(); }
int64_t y_numel(const ConvGeometry& g) { return g.batch * g.out_channels * g.out_numel(); }
int64_t w_numel(const ConvGeometry& g) {
  return g.out_channels * (g.in_channels / g.groups) * g.kernel_numel();
}

std::vector<float> widen(const void* p, int64_t n) {
  const auto* b = static_cast<const BFloat16*>(p);
  return std::vector<float>(b, b + n);
}
void narrow_into(const std::vector<float>& v, void* p) {
  auto* b = static_cast<BFloat16*>(p);
  for (size_t i = 0; i < v.size(); ++i) b[i] = BFloat16(v[i]);
}

// im2col kernel `k(g, dtype, a, b, c)` with a (na elements), b (nb) and result c (nc).
template <class K>
void im2col_any(K k, const ConvGeometry& g, ScalarType dt, const void* a, int64_t na, const void* b,
                int64_t nb, void* c, int64_t nc) {
  if (dt != kBFloat16) return k(g, dt, a, b, c);
  const std::vector<float> fa = widen(a, na), fb = widen(b, nb);
  std::vector<float> fc(static_cast<size_t>(nc));
  k(g, kFloat32, fa.data(), fb.data(), fc.data());
  narrow_into(fc, c);
}

}  // namespace

void conv_forward(const ConvGeometry& g, ScalarType dt, const void* x, const void* w, void* y) {
  if (onednn::conv_forward(g, dt, x, w, y)) return;
  im2col_any(im2col::forward, g, dt, x, x_numel(g), w, w_numel(g), y, y_numel(g));
}
void conv_backward_data(const ConvGeometry& g, ScalarType dt, const void* gy, const void* w,
                        void* gx) {
  if (onednn::conv_backward_data(g, dt, gy, w, gx)) return;
  im2col_any(im2col::backward_data, g, dt, gy, y_numel(g), w, w_numel(g), gx, x_numel(g));
}
void conv_backward_weight(const ConvGeometry& g, ScalarType dt, const void* gy, const void* x,
                          void* gw) {
  if (onednn::conv_backward_weight(g, dt, gy, x, gw)) return;
  im2col_any(im2col::backward_weight, g, dt, gy, y_numel(g), x, x_numel(g), gw, w_numel(g));
}

}  // namespace kiln::cpu
