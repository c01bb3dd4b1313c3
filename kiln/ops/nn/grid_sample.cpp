// grid_sampler_2d: input [N, C, H, W] read at the points of grid [N, OH, OW, 2] ((x, y) in
// [-1, 1] spanning the input), bilinear or nearest, with zeros, border or reflection padding;
// and grid_sampler_2d_backward, its gradients to the input and the grid (not differentiable
// again, as in PyTorch).
#include <algorithm>
#include <cmath>

#include "kiln/ops/conv.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/nn/grid_sample_util.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/pool/planes.h"
#include "kiln/ops/pool/util.h"

namespace kiln {
namespace {

using namespace grid;  // NOLINT: the modes and the shared pieces

// A grid value's position in the input along a dim of `size`, and d position / d value.
template <class T>
struct Coord {
  T pos, grad;
};

template <class T>
void clip(Coord<T>& c, int64_t size) {
  if (c.pos <= 0) {
    c = {0, 0};
  } else if (c.pos >= static_cast<T>(size - 1)) {
    c = {static_cast<T>(size - 1), 0};
  }
}

// Folds c into [twice_low / 2, twice_high / 2] by reflections at the ends.
template <class T>
void reflect(Coord<T>& c, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) {
    c = {0, 0};
    return;
  }
  const T low = static_cast<T>(twice_low) / 2, span = static_cast<T>(twice_high - twice_low) / 2;
  T x = c.pos - low;
  if (x < 0) x = -x, c.grad = -c.grad;
  const T extra = std::fmod(x, span);
  const bool flipped = std::fmod(std::floor(x / span), T(2)) != 0;  // no int overflow
  c.pos = flipped ? span - extra + low : extra + low;
  if (flipped) c.grad = -c.grad;
}

template <class T>
Coord<T> source(T g, int64_t size, const GridMode& m) {
  const T n = static_cast<T>(size);
  Coord<T> c = m.align_corners ? Coord<T>{(g + 1) / 2 * (n - 1), (n - 1) / 2}
                               : Coord<T>{((g + 1) * n - 1) / 2, n / 2};
  if (m.padding == kReflectionPadding) {
    if (m.align_corners)
      reflect(c, 0, 2 * (size - 1));
    else
      reflect(c, -1, 2 * size - 1);
  }
  if (m.padding != kZerosPadding) clip(c, size);
  return c;
}

// The in-bounds input taps of one point at (x, y): offset y * W + x, weight, and the weight's
// derivatives with respect to x and y.
template <class T>
struct Taps {
  int n = 0;
  int64_t offset[4];
  T weight[4], dx[4], dy[4];
};

template <class T>
Taps<T> taps(T x, T y, int64_t H, int64_t W, int64_t interpolation) {
  Taps<T> t;
  // Far outside (or NaN): no taps; also keeps the integer conversions below defined.
  const T far = static_cast<T>(int64_t{1} << 40);
  if (!(std::abs(x) < far && std::abs(y) < far)) return t;
  auto add = [&](int64_t iy, int64_t ix, T w, T dx, T dy) {
    if (iy < 0 || iy >= H || ix < 0 || ix >= W) return;
    t.offset[t.n] = iy * W + ix;
    t.weight[t.n] = w;
    t.dx[t.n] = dx;
    t.dy[t.n] = dy;
    ++t.n;
  };
  if (interpolation == kNearestMode) {
    // Rounds half to even, as PyTorch.
    add(static_cast<int64_t>(std::nearbyint(y)), static_cast<int64_t>(std::nearbyint(x)), 1, 0, 0);
    return t;
  }
  const T x0 = std::floor(x), y0 = std::floor(y);
  const T ax = x - x0, ay = y - y0;  // distances from the top-left tap
  const auto ix = static_cast<int64_t>(x0), iy = static_cast<int64_t>(y0);
  add(iy, ix, (1 - ax) * (1 - ay), -(1 - ay), -(1 - ax));
  add(iy, ix + 1, ax * (1 - ay), 1 - ay, -ax);
  add(iy + 1, ix, (1 - ax) * ay, -ay, 1 - ax);
  add(iy + 1, ix + 1, ax * ay, ay, ax);
  return t;
}

// Calls f(n, point, taps, x, y) for each grid point, in parallel over the points of one batch
// element when by_batch (the backward accumulates into the batch element's input gradient).
template <class T, class F>
void for_points(const Tensor& grid, int64_t H, int64_t W, const GridMode& m, bool by_batch,
                const F& f) {
  const int64_t N = grid.sym_size(0).guard_int();
  const int64_t P = (grid.sym_size(1) * grid.sym_size(2)).guard_int();
  const T* pg = grid.data_ptr<T>();
  auto point = [&](int64_t n, int64_t p) {
    const T* g = pg + (n * P + p) * 2;
    const Coord<T> x = source(g[0], W, m), y = source(g[1], H, m);
    f(n, p, taps(x.pos, y.pos, H, W, m.interpolation), x, y);
  };
  if (by_batch) {
    pool::for_planes(N, P * 8, [&](int64_t n) {
      for (int64_t p = 0; p < P; ++p) point(n, p);
    });
  } else {
    pool::for_planes(N * P, 8, [&](int64_t j) { point(j / P, j % P); });
  }
}

void check_grid_inputs(const char* op, const Tensor& input, const Tensor& grid, const Attrs& a) {
  pool::check_input(op, input);
  KILN_CHECK(grid.dim() == 4 && grid.sym_size(0) == input.sym_size(0) && grid.sym_size(3) == 2, op,
             ": expected grid of shape [N, OH, OW, 2] with N = ", input.sym_size(0), ", got ",
             grid.sym_sizes());
  KILN_CHECK(grid.dtype() == input.dtype(), op,
             ": expected input and grid of one floating dtype, got ", input.dtype(), " and ",
             grid.dtype());
  const GridMode m = grid_mode(a);
  KILN_CHECK(m.interpolation == kBilinearMode || m.interpolation == kNearestMode, op,
             ": interpolation_mode must be 0 (bilinear) or 1 (nearest), got ", m.interpolation);
  KILN_CHECK(m.padding >= kZerosPadding && m.padding <= kReflectionPadding, op,
             ": padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got ", m.padding);
}

}  // namespace

KILN_REGISTER_OP(grid_sampler_2d)
    .schema(
        "grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, "
        "bool align_corners) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      check_grid_inputs("grid_sampler_2d", in[0], in[1], a);
      return meta::one_spec(sampled_sizes(in[0], in[1]), in[0].dtype(), in[0].device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const GridMode m = grid_mode(a);
      const Tensor x = pool::to_compute(in[0]), grid = pool::to_compute(in[1]);
      const int64_t C = x.sym_size(1).guard_int();
      const int64_t H = x.sym_size(2).guard_int(), W = x.sym_size(3).guard_int();
      const int64_t P = (grid.sym_size(1) * grid.sym_size(2)).guard_int();
      pool::compute_into(out[0], [&](Tensor& y) {
        pool::visit_compute(y.dtype(), [&]<class T>(T) {
          const T* px = x.data_ptr<T>();
          T* py = y.data_ptr<T>();
          for_points<T>(
              grid, H, W, m, false,
              [&](int64_t n, int64_t p, const Taps<T>& t, const Coord<T>&, const Coord<T>&) {
                for (int64_t c = 0; c < C; ++c) {
                  const T* plane = px + (n * C + c) * H * W;
                  T v = 0;
                  for (int k = 0; k < t.n; ++k) v += t.weight[k] * plane[t.offset[k]];
                  py[(n * C + c) * P + p] = v;
                }
              });
        });
      });
    })
    .save_inputs({0, 1})
    .first_order_only()
    .backward([](const BackwardContext& c) {
      static const OpDef& op = get_op("grid_sampler_2d_backward");
      return call_op(op, {c.grad(), c.input(0), c.input(1)}, c.attrs);
    })
    .samples(forward_samples)
    .error_samples(forward_error_samples)
    .reference(forward_reference)
    .dtypes({kFloat64, kFloat32})
    .lowering("extern:grid_sampler_2d");

// grid_sampler_2d_backward(grad [N, C, OH, OW], input, grid, <modes>) -> (grad_input, grad_grid)
KILN_REGISTER_OP(grid_sampler_2d_backward)
    .schema(
        "grid_sampler_2d_backward(Tensor grad, Tensor input, Tensor grid, int interpolation_mode, "
        "int padding_mode, bool align_corners) -> (Tensor, Tensor)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      check_grid_inputs("grid_sampler_2d_backward", in[1], in[2], a);
      const SymShape expected = sampled_sizes(in[1], in[2]), got = in[0].sym_sizes();
      KILN_CHECK(got == expected, "grid_sampler_2d_backward: expected a gradient of size ",
                 expected, ", but got ", got);
      return std::vector<TensorSpec>{meta::spec(in[1].sym_sizes(), in[1].dtype(), in[1].device()),
                                     meta::spec(in[2].sym_sizes(), in[2].dtype(), in[2].device())};
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const GridMode m = grid_mode(a);
      const Tensor g = pool::to_compute(in[0]), x = pool::to_compute(in[1]);
      const Tensor grid = pool::to_compute(in[2]);
      const int64_t C = x.sym_size(1).guard_int();
      const int64_t H = x.sym_size(2).guard_int(), W = x.sym_size(3).guard_int();
      const int64_t P = (grid.sym_size(1) * grid.sym_size(2)).guard_int();
      pool::compute_into(out[0], [&](Tensor& grad_input) {
        pool::compute_into(out[1], [&](Tensor& grad_grid) {
          pool::visit_compute(grad_input.dtype(), [&]<class T>(T) {
            const T *px = x.data_ptr<T>(), *pgo = g.data_ptr<T>();
            T *pgi = grad_input.data_ptr<T>(), *pgg = grad_grid.data_ptr<T>();
            std::fill(pgi, pgi + grad_input.numel(), T(0));
            for_points<T>(grid, H, W, m, true,
                          [&](int64_t n, int64_t p, const Taps<T>& t, const Coord<T>& cx,
                              const Coord<T>& cy) {
                            T dx = 0, dy = 0;
                            for (int64_t c = 0; c < C; ++c) {
                              const T go = pgo[(n * C + c) * P + p];
                              const T* plane = px + (n * C + c) * H * W;
                              T* grad_plane = pgi + (n * C + c) * H * W;
                              for (int k = 0; k < t.n; ++k) {
                                grad_plane[t.offset[k]] += t.weight[k] * go;
                                dx += t.dx[k] * plane[t.offset[k]] * go;
                                dy += t.dy[k] * plane[t.offset[k]] * go;
                              }
                            }
                            pgg[(n * P + p) * 2] = dx * cx.grad;
                            pgg[(n * P + p) * 2 + 1] = dy * cy.grad;
                          });
          });
        });
      });
    })
    .samples(backward_samples)
    .error_samples(backward_error_samples)
    .reference(backward_reference)
    .dtypes({kFloat64, kFloat32})
    .lowering("extern:grid_sampler_2d_backward");

Tensor grid_sampler_2d(const Tensor& input, const Tensor& grid, int64_t interpolation_mode,
                       int64_t padding_mode, bool align_corners) {
  static const OpDef& op = get_op("grid_sampler_2d");
  return call_op1(op, {input, grid}, {interpolation_mode, padding_mode, align_corners});
}

Tensor grid_sampler(const Tensor& input, const Tensor& grid, int64_t interpolation_mode,
                    int64_t padding_mode, bool align_corners) {
  KILN_CHECK(input.dim() == 4, "grid_sampler: expected a 4-D input [N, C, H, W] (only 2-d ",
             "sampling is supported), got ", input.sym_sizes());
  return grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners);
}

Tensor affine_grid_generator(const Tensor& theta, IntArrayRef size, bool align_corners) {
  KILN_CHECK(size.size() == 4, "affine_grid_generator: expected size [N, C, H, W] (only 2-d ",
             "grids are supported), got ", size);
  KILN_CHECK(theta.dim() == 3 && theta.sym_size(0) == size[0] && theta.sym_size(1) == 2 &&
                 theta.sym_size(2) == 3,
             "affine_grid_generator: expected theta of shape [", size[0], ", 2, 3], got ",
             theta.sym_sizes());
  KILN_CHECK(is_floating_point(theta.dtype()),
             "affine_grid_generator: expected a floating point theta, got ", theta.dtype());
  const int64_t H = size[2], W = size[3];
  // Normalised pixel positions along a dim: its ends at -1 and 1 (align_corners) or the pixel
  // centres of [-1, 1] split into n cells.
  auto positions = [&](int64_t n) {
    Tensor r = arange(n, theta.options()).to(theta.dtype());
    if (align_corners) return n > 1 ? r * (2.0 / static_cast<double>(n - 1)) - 1 : r * 0.0;
    return (r * 2 + 1) * (1.0 / static_cast<double>(n)) - 1;
  };
  const Tensor xs = positions(W).view({1, W, 1}).expand({H, W, 1});
  const Tensor ys = positions(H).view({H, 1, 1}).expand({H, W, 1});
  const Tensor base = cat({xs, ys, ones({H, W, 1}, theta.options())}, 2).view({1, H * W, 3});
  return base.matmul(theta.transpose(1, 2)).view({size[0], H, W, 2});
}

}  // namespace kiln
