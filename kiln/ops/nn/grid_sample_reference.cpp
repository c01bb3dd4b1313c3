// Op-table samples and float64 references of the grid_sampler_2d entries: the definitions (a
// position folded by one reflection at a time, tent weights over every input position), and the
// grid gradient by central differences, independent of the kernels in grid_sample.cpp.
#include <algorithm>
#include <cmath>
#include <string>

#include "kiln/ops/nn/grid_sample_util.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln::grid {
namespace {

// Reflections one at a time, then the clamp; tent weights over every input position.
double reference_source(double g, int64_t size, const GridMode& m) {
  const auto n = static_cast<double>(size);
  double pos = m.align_corners ? (g + 1) / 2 * (n - 1) : ((g + 1) * n - 1) / 2;
  if (m.padding == kReflectionPadding) {
    const double lo = m.align_corners ? 0 : -0.5, hi = m.align_corners ? n - 1 : n - 0.5;
    if (hi > lo) {
      while (pos < lo || pos > hi) pos = pos < lo ? 2 * lo - pos : 2 * hi - pos;
    } else {
      pos = 0;
    }
  }
  if (m.padding != kZerosPadding) pos = std::clamp(pos, 0.0, n - 1);
  return pos;
}

// Output [n, c] at grid value (gx, gy) of plane x [H, W].
double reference_point(const double* x, int64_t H, int64_t W, double gx, double gy,
                       const GridMode& m, double* grad_plane = nullptr, double g = 0) {
  const double px = reference_source(gx, W, m), py = reference_source(gy, H, m);
  double out = 0;
  for (int64_t iy = 0; iy < H; ++iy)
    for (int64_t ix = 0; ix < W; ++ix) {
      double w;
      if (m.interpolation == kNearestMode) {
        w = std::nearbyint(px) == static_cast<double>(ix) &&
                    std::nearbyint(py) == static_cast<double>(iy)
                ? 1
                : 0;
      } else {
        w = std::max(0.0, 1 - std::abs(px - static_cast<double>(ix))) *
            std::max(0.0, 1 - std::abs(py - static_cast<double>(iy)));
      }
      out += w * x[iy * W + ix];
      if (grad_plane) grad_plane[iy * W + ix] += w * g;
    }
  return out;
}

}  // namespace

std::vector<Tensor> forward_reference(const std::vector<Tensor>& in, const Attrs& a) {
  const GridMode m = grid_mode(a);
  Tensor x = in[0].to(kFloat64).contiguous(), grid = in[1].to(kFloat64).contiguous();
  Tensor y = empty(sampled_sizes(x, grid), kFloat64);
  const int64_t N = x.sym_size(0).guard_int(), C = x.sym_size(1).guard_int();
  const int64_t H = x.sym_size(2).guard_int(), W = x.sym_size(3).guard_int();
  const int64_t P = (grid.sym_size(1) * grid.sym_size(2)).guard_int();
  const double* pg = grid.data_ptr<double>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p)
        y.data_ptr<double>()[(n * C + c) * P + p] =
            reference_point(x.data_ptr<double>() + (n * C + c) * H * W, H, W, pg[(n * P + p) * 2],
                            pg[(n * P + p) * 2 + 1], m);
  return {y};
}

// The input gradient by the tent weights; the grid gradient by central differences of
// reference_point (exact up to rounding: the output is linear in each coordinate between taps),
// 0 for nearest sampling.
std::vector<Tensor> backward_reference(const std::vector<Tensor>& in, const Attrs& a) {
  const GridMode m = grid_mode(a);
  Tensor g = in[0].to(kFloat64).contiguous();
  Tensor x = in[1].to(kFloat64).contiguous(), grid = in[2].to(kFloat64).contiguous();
  Tensor gi = zeros(x.sym_sizes(), kFloat64), gg = zeros(grid.sym_sizes(), kFloat64);
  const int64_t N = x.sym_size(0).guard_int(), C = x.sym_size(1).guard_int();
  const int64_t H = x.sym_size(2).guard_int(), W = x.sym_size(3).guard_int();
  const int64_t P = (grid.sym_size(1) * grid.sym_size(2)).guard_int();
  const double* pg = grid.data_ptr<double>();
  const double h = 1e-5;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p) {
        const double* plane = x.data_ptr<double>() + (n * C + c) * H * W;
        const double gx = pg[(n * P + p) * 2], gy = pg[(n * P + p) * 2 + 1];
        const double go = g.data_ptr<double>()[(n * C + c) * P + p];
        reference_point(plane, H, W, gx, gy, m, gi.data_ptr<double>() + (n * C + c) * H * W, go);
        // Nearest sampling is piecewise constant in the grid: its grid gradient is 0 (as in
        // PyTorch), and a difference across a rounding boundary would be a spike.
        if (m.interpolation == kNearestMode) continue;
        double* d = gg.data_ptr<double>() + (n * P + p) * 2;
        d[0] += go *
                (reference_point(plane, H, W, gx + h, gy, m) -
                 reference_point(plane, H, W, gx - h, gy, m)) /
                (2 * h);
        d[1] += go *
                (reference_point(plane, H, W, gx, gy + h, m) -
                 reference_point(plane, H, W, gx, gy - h, m)) /
                (2 * h);
      }
  return {gi, gg};
}

std::vector<OpSample> forward_samples(ScalarType dt) {
  auto mk = [dt](std::vector<int64_t> in, std::vector<int64_t> grid, double range,
                 int64_t interpolation, int64_t padding, bool align, std::string desc,
                 bool nc = false) {
    return OpSample{{samples::make(std::move(in), dt, -3, 3, nc),
                     samples::make(std::move(grid), dt, -range, range)},
                    {interpolation, padding, align},
                    std::move(desc)};
  };
  return {
      mk({2, 3, 4, 5}, {2, 3, 4, 2}, 1.2, kBilinearMode, kZerosPadding, false, "bilinear zeros"),
      mk({1, 2, 4, 5}, {1, 3, 3, 2}, 1.3, kBilinearMode, kZerosPadding, true,
         "bilinear zeros align_corners"),
      mk({1, 2, 5, 4}, {1, 4, 3, 2}, 1.4, kBilinearMode, kBorderPadding, false, "bilinear border"),
      mk({1, 2, 4, 5}, {1, 3, 4, 2}, 2.5, kBilinearMode, kReflectionPadding, false,
         "bilinear reflection"),
      mk({1, 2, 4, 5}, {1, 3, 4, 2}, 2.5, kBilinearMode, kReflectionPadding, true,
         "bilinear reflection align_corners non-contiguous", true),
      mk({2, 2, 4, 5}, {2, 3, 3, 2}, 1.3, kNearestMode, kZerosPadding, false, "nearest zeros"),
      mk({1, 2, 4, 5}, {1, 3, 3, 2}, 2.5, kNearestMode, kReflectionPadding, true,
         "nearest reflection align_corners"),
      mk({1, 2, 5, 4}, {1, 3, 3, 2}, 1.5, kNearestMode, kBorderPadding, false, "nearest border"),
  };
}

std::vector<OpErrorSample> forward_error_samples() {
  using samples::make;
  const Tensor x = make({1, 2, 3, 3}, kFloat32), grid = make({1, 2, 2, 2}, kFloat32);
  const Attrs ok{kBilinearMode, kZerosPadding, false};
  return {
      {{make({2, 3, 3}, kFloat32), grid},
       ok,
       "expected a 4-D input [N, C, H, W], got [2, 3, 3]",
       "input of rank 3"},
      {{x, make({1, 2, 2, 3}, kFloat32)},
       ok,
       "expected grid of shape [N, OH, OW, 2] with N = 1, got [1, 2, 2, 3]",
       "grid's last dim"},
      {{x, make({2, 2, 2, 2}, kFloat32)},
       ok,
       "expected grid of shape [N, OH, OW, 2] with N = 1, got [2, 2, 2, 2]",
       "grid's batch"},
      {{x, make({1, 2, 2, 2}, kFloat64)},
       ok,
       "expected input and grid of one floating dtype, got float32 and float64",
       "dtypes"},
      {{x, grid},
       {int64_t{2}, kZerosPadding, false},
       "interpolation_mode must be 0 (bilinear) or 1 (nearest), got 2",
       "bicubic"},
      {{x, grid},
       {kBilinearMode, int64_t{3}, false},
       "padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got 3",
       "padding_mode 3"},
  };
}

// The forward samples' output shapes as gradients, with their input and grid.
std::vector<OpSample> backward_samples(ScalarType dt) {
  std::vector<OpSample> out;
  for (OpSample& s : forward_samples(dt)) {
    std::vector<int64_t> shape;
    for (const SymInt& v : sampled_sizes(s.inputs[0], s.inputs[1])) shape.push_back(v.guard_int());
    out.push_back({{samples::make(shape, dt), s.inputs[0], s.inputs[1]}, s.attrs, s.desc});
  }
  return out;
}

std::vector<OpErrorSample> backward_error_samples() {
  const Tensor x = samples::make({1, 2, 3, 3}, kFloat32);
  const Tensor grid = samples::make({1, 2, 2, 2}, kFloat32);
  return {{{samples::make({1, 2, 2, 3}, kFloat32), x, grid},
           {kBilinearMode, kZerosPadding, false},
           "expected a gradient of size [1, 2, 2, 2], but got [1, 2, 2, 3]",
           "gradient of another shape"}};
}

}  // namespace kiln::grid
