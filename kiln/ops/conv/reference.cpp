#include "kiln/ops/conv/reference.h"

#include <array>

#include "kiln/ops/conv/util.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln::conv {
namespace {

// A float64 copy of t seen as [A, B, D, H, W] (missing leading spatial dims are 1).
struct Grid5 {
  Tensor t;
  int64_t s[5] = {1, 1, 1, 1, 1};
  explicit Grid5(const Tensor& x) : t(x.to(kFloat64).contiguous()) {
    const int64_t nd = x.dim() - 2;
    s[0] = x.sym_size(0).guard_int();
    s[1] = x.sym_size(1).guard_int();
    for (int64_t d = 0; d < nd; ++d) s[5 - nd + d] = x.sym_size(d + 2).guard_int();
  }
  double& at(int64_t a, int64_t b, int64_t d, int64_t h, int64_t w) const {
    return t.data_ptr<double>()[(((a * s[1] + b) * s[2] + d) * s[3] + h) * s[4] + w];
  }
};

// Spatial parameters padded to three dims (leading dims: stride 1, padding 0, dilation 1).
struct Spatial3 {
  int64_t stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dil[3] = {1, 1, 1};
  explicit Spatial3(const Params& p) {
    const size_t nd = p.stride.size();
    for (size_t d = 0; d < nd; ++d) {
      stride[3 - nd + d] = p.stride[d];
      pad[3 - nd + d] = p.padding[d];
      dil[3 - nd + d] = p.dilation[d];
    }
  }
  // Input position of output position o and kernel tap k along dim d.
  int64_t in_pos(int d, int64_t o, int64_t k) const { return o * stride[d] - pad[d] + k * dil[d]; }
};

// Calls f(input position, output position, kernel tap) for each in-range pairing of a
// convolution from `x` (small side: input) to `y` (output) with kernel `w`.
template <class F>
void for_each_tap(const Grid5& x, const Grid5& y, const Grid5& w, const Spatial3& sp, F&& f) {
  for (int64_t od = 0; od < y.s[2]; ++od)
    for (int64_t oh = 0; oh < y.s[3]; ++oh)
      for (int64_t ow = 0; ow < y.s[4]; ++ow)
        for (int64_t kd = 0; kd < w.s[2]; ++kd)
          for (int64_t kh = 0; kh < w.s[3]; ++kh)
            for (int64_t kw = 0; kw < w.s[4]; ++kw) {
              const int64_t id = sp.in_pos(0, od, kd), ih = sp.in_pos(1, oh, kh),
                            iw = sp.in_pos(2, ow, kw);
              if (id < 0 || ih < 0 || iw < 0 || id >= x.s[2] || ih >= x.s[3] || iw >= x.s[4])
                continue;
              f(std::array<int64_t, 3>{id, ih, iw}, std::array<int64_t, 3>{od, oh, ow},
                std::array<int64_t, 3>{kd, kh, kw});
            }
}

}  // namespace

std::vector<Tensor> convolution_reference(const std::vector<Tensor>& in, const Attrs& a) {
  const Params p = params("convolution", a, in[0].dim() - 2);
  const SymShape out_sizes = output_sizes("convolution", in[0], in[1], in[2], p);
  Tensor out = zeros(out_sizes, kFloat64);
  Grid5 x(in[0]), w(in[1]), y(out);
  const Spatial3 sp(p);
  const int64_t G = p.groups;
  for (int64_t n = 0; n < x.s[0]; ++n) {
    if (!p.transposed) {
      // y[n, o] += x[n, g*cg + c] (*) w[o, c]
      const int64_t cg = w.s[1], og = w.s[0] / G;
      for (int64_t o = 0; o < w.s[0]; ++o)
        for (int64_t c = 0; c < cg; ++c)
          for_each_tap(x, y, w, sp, [&](auto i, auto q, auto k) {
            y.at(n, o, q[0], q[1], q[2]) +=
                x.at(n, o / og * cg + c, i[0], i[1], i[2]) * w.at(o, c, k[0], k[1], k[2]);
          });
    } else {
      // The adjoint: x plays the output side, y the input side.
      const int64_t cg = w.s[0] / G, og = w.s[1];
      for (int64_t ci = 0; ci < w.s[0]; ++ci)
        for (int64_t o = 0; o < og; ++o)
          for_each_tap(y, x, w, sp, [&](auto i, auto q, auto k) {
            y.at(n, ci / cg * og + o, i[0], i[1], i[2]) +=
                x.at(n, ci, q[0], q[1], q[2]) * w.at(ci, o, k[0], k[1], k[2]);
          });
    }
  }
  if (in[2].defined()) {
    Tensor b = in[2].to(kFloat64).contiguous();
    for (int64_t n = 0; n < y.s[0]; ++n)
      for (int64_t c = 0; c < y.s[1]; ++c)
        for (int64_t d = 0; d < y.s[2]; ++d)
          for (int64_t h = 0; h < y.s[3]; ++h)
            for (int64_t v = 0; v < y.s[4]; ++v) y.at(n, c, d, h, v) += b.data_ptr<double>()[c];
  }
  return {y.t.view(out_sizes)};
}

std::vector<Tensor> weight_grad_reference(const std::vector<Tensor>& in, const Attrs& a) {
  const Attrs full{a.ints(0), a.ints(1), a.ints(2), false, std::vector<int64_t>{0}, a.i(3)};
  const Params p = params("convolution_backward_weight", full, in[1].dim() - 2);
  Tensor out = zeros(a.shape(4), kFloat64);
  Grid5 gy(in[0]), x(in[1]), gw(out);
  const Spatial3 sp(p);
  const int64_t cg = gw.s[1], og = gw.s[0] / p.groups;
  for (int64_t n = 0; n < x.s[0]; ++n)
    for (int64_t o = 0; o < gw.s[0]; ++o)
      for (int64_t c = 0; c < cg; ++c)
        for_each_tap(x, gy, gw, sp, [&](auto i, auto q, auto k) {
          gw.at(o, c, k[0], k[1], k[2]) +=
              gy.at(n, o, q[0], q[1], q[2]) * x.at(n, o / og * cg + c, i[0], i[1], i[2]);
        });
  return {gw.t.view(a.shape(4))};
}

namespace {
using V = std::vector<int64_t>;

OpSample conv_sample(ScalarType dt, V x, V w, bool bias, V stride, V pad, V dil, int64_t groups,
                     std::string desc, bool transposed = false, V out_pad = {0},
                     bool noncontiguous = false) {
  const int64_t out_channels = transposed ? w[1] * groups : w[0];
  Tensor b = bias ? samples::make({out_channels}, dt) : Tensor();
  return {
      {samples::make(std::move(x), dt, -3, 3, noncontiguous), samples::make(std::move(w), dt), b},
      {stride, pad, dil, transposed, out_pad, groups},
      std::move(desc)};
}
}  // namespace

std::vector<OpSample> convolution_samples(ScalarType dt) {
  std::vector<OpSample> s = {
      conv_sample(dt, {2, 3, 5, 5}, {4, 3, 3, 3}, true, {1}, {0}, {1}, 1, "2d"),
      conv_sample(dt, {1, 2, 6, 5}, {3, 2, 3, 2}, true, {2, 1}, {1, 0}, {1}, 1, "2d stride pad"),
      conv_sample(dt, {2, 4, 7, 6}, {6, 2, 3, 2}, false, {1}, {2, 1}, {2, 1}, 2,
                  "2d dilation groups no bias"),
      conv_sample(dt, {2, 3, 5, 5}, {2, 3, 2, 2}, true, {1}, {1}, {1}, 1, "non-contiguous input",
                  false, {0}, true),
      conv_sample(dt, {2, 5, 4, 4}, {3, 5, 1, 1}, true, {1}, {0}, {1}, 1, "1x1"),
      conv_sample(dt, {2, 3, 9}, {4, 3, 3}, true, {2}, {1}, {2}, 1, "1d"),
      conv_sample(dt, {1, 2, 4, 5, 4}, {3, 2, 2, 3, 2}, true, {1}, {1}, {1}, 1, "3d"),
      conv_sample(dt, {2, 4, 3, 4}, {4, 3, 3, 3}, true, {2}, {1}, {1}, 1,
                  "transposed output_padding", true, {1}),
      conv_sample(dt, {1, 4, 3, 3}, {4, 2, 2, 3}, false, {2, 1}, {0, 1}, {2, 1}, 2,
                  "transposed groups dilation", true, {1, 0}),
      conv_sample(dt, {2, 2, 5}, {2, 3, 3}, true, {3}, {1}, {1}, 1, "transposed 1d", true, {2}),
  };
  // A transposed (non-contiguous) weight.
  OpSample t =
      conv_sample(dt, {1, 4, 5, 4}, {3, 4, 3, 3}, true, {1}, {1}, {1}, 1, "non-contiguous weight");
  t.inputs[1] = samples::make({4, 3, 3, 3}, dt).transpose(0, 1);
  s.push_back(t);
  return s;
}

std::vector<OpSample> weight_grad_samples(ScalarType dt) {
  auto mk = [dt](V gy, V x, V stride, V pad, V dil, int64_t groups, V w, std::string desc,
                 bool noncontiguous = false) {
    return OpSample{
        {samples::make(std::move(gy), dt, -3, 3, noncontiguous), samples::make(std::move(x), dt)},
        {stride, pad, dil, groups, SymShape(w.begin(), w.end())},
        std::move(desc)};
  };
  return {
      mk({2, 4, 3, 3}, {2, 3, 5, 5}, {1}, {0}, {1}, 1, {4, 3, 3, 3}, "2d"),
      mk({1, 3, 3, 4}, {1, 2, 6, 5}, {2, 1}, {1, 0}, {1}, 1, {3, 2, 3, 2}, "2d stride pad"),
      mk({2, 6, 7, 7}, {2, 4, 7, 6}, {1}, {2, 1}, {2, 1}, 2, {6, 2, 3, 2}, "dilation groups"),
      mk({2, 4, 4}, {2, 3, 9}, {2}, {1}, {2}, 1, {4, 3, 3}, "1d"),
      mk({2, 4, 3, 3}, {2, 3, 5, 5}, {1}, {0}, {1}, 1, {4, 3, 3, 3}, "non-contiguous", true),
  };
}

}  // namespace kiln::conv
