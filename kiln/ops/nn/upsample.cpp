// upsample_nearest2d and upsample_bilinear2d (separable linear maps, see pool_linear.h),
// interpolate, pixel_shuffle and pixel_unshuffle.
#include <cmath>

#include "kiln/ops/conv.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/pool/linear.h"
#include "kiln/ops/pool/util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

using V = std::vector<int64_t>;

// Attrs: output_size, [align_corners,] scale_h, scale_w (None: derived from the sizes).
SymShape upsample_sizes(const char* op, const Tensor& x, const Attrs& a) {
  KILN_CHECK(x.dim() == 4, op, ": expected a 4-D input [N, C, H, W], got ", x.sym_sizes());
  KILN_CHECK(is_floating_point(x.dtype()), op, ": expected a floating point input, got ",
             x.dtype());
  const V o = a.ints(0);
  KILN_CHECK(o.size() == 2 && o[0] > 0 && o[1] > 0 && x.sym_size(2) > 0 && x.sym_size(3) > 0, op,
             ": input and output sizes should be greater than 0, but got input (H: ", x.sym_size(2),
             ", W: ", x.sym_size(3), ") output (H: ", o.size() == 2 ? o[0] : 0,
             ", W: ", o.size() == 2 ? o[1] : 0, ")");
  return {x.sym_size(0), x.sym_size(1), o[0], o[1]};
}

// PyTorch's source-to-destination scale: 1/scale_factor when one was given, else in/out.
double area_scale(std::optional<double> scale, int64_t in, int64_t out) {
  return scale && *scale > 0 ? 1.0 / *scale : static_cast<double>(in) / static_cast<double>(out);
}

// PyTorch computes the nearest source index in float.
int64_t nearest_source(int64_t o, int64_t in, int64_t out, std::optional<double> scale) {
  const float s = static_cast<float>(area_scale(scale, in, out));
  return std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * s)), in - 1);
}

pool::Taps nearest_taps(const Attrs& a, int d, int64_t in, int64_t out) {
  pool::Taps t;
  for (int64_t o = 0; o < out; ++o) {
    t.add(nearest_source(o, in, out, a.opt_f(1 + d)), 1.0);
    t.close();
  }
  return t;
}

std::vector<Tensor> nearest_reference(const std::vector<Tensor>& in, const Attrs& a) {
  Tensor x = in[0].to(kFloat64).contiguous();
  const V o = a.ints(0);
  const int64_t P = (x.sym_size(0) * x.sym_size(1)).guard_int();
  const int64_t H = x.sym_size(2).guard_int(), W = x.sym_size(3).guard_int();
  Tensor y = empty({x.sym_size(0), x.sym_size(1), o[0], o[1]}, kFloat64);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t oh = 0; oh < o[0]; ++oh)
      for (int64_t ow = 0; ow < o[1]; ++ow) {
        const int64_t ih = nearest_source(oh, H, o[0], a.opt_f(1));
        const int64_t iw = nearest_source(ow, W, o[1], a.opt_f(2));
        y.data_ptr<double>()[(p * o[0] + oh) * o[1] + ow] =
            x.data_ptr<double>()[(p * H + ih) * W + iw];
      }
  return {y};
}

// Linear interpolation along one dim: the two source indices and their weights.
struct Lerp {
  int64_t i0, i1;
  double w0, w1;
};
Lerp linear_source(int64_t o, int64_t in, int64_t out, bool align_corners,
                   std::optional<double> scale) {
  double src;
  if (align_corners) {
    src = out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) * o : 0.0;
  } else {
    src = std::max(area_scale(scale, in, out) * (o + 0.5) - 0.5, 0.0);
  }
  const auto i0 = static_cast<int64_t>(src);
  const int64_t i1 = i0 < in - 1 ? i0 + 1 : i0;
  const double l1 = src - static_cast<double>(i0);
  return {i0, i1, 1.0 - l1, l1};
}

pool::Taps bilinear_taps(const Attrs& a, int d, int64_t in, int64_t out) {
  pool::Taps t;
  for (int64_t o = 0; o < out; ++o) {
    const Lerp l = linear_source(o, in, out, a.b(1), a.opt_f(2 + d));
    t.add(l.i0, l.w0);
    t.add(l.i1, l.w1);
    t.close();
  }
  return t;
}

std::vector<Tensor> bilinear_reference(const std::vector<Tensor>& in, const Attrs& a) {
  Tensor x = in[0].to(kFloat64).contiguous();
  const V o = a.ints(0);
  const int64_t P = (x.sym_size(0) * x.sym_size(1)).guard_int();
  const int64_t H = x.sym_size(2).guard_int(), W = x.sym_size(3).guard_int();
  Tensor y = empty({x.sym_size(0), x.sym_size(1), o[0], o[1]}, kFloat64);
  const double* px = x.data_ptr<double>();
  for (int64_t p = 0; p < P; ++p)
    for (int64_t oh = 0; oh < o[0]; ++oh)
      for (int64_t ow = 0; ow < o[1]; ++ow) {
        const Lerp h = linear_source(oh, H, o[0], a.b(1), a.opt_f(2));
        const Lerp w = linear_source(ow, W, o[1], a.b(1), a.opt_f(3));
        const double* q = px + p * H * W;
        y.data_ptr<double>()[(p * o[0] + oh) * o[1] + ow] =
            h.w0 * (w.w0 * q[h.i0 * W + w.i0] + w.w1 * q[h.i0 * W + w.i1]) +
            h.w1 * (w.w0 * q[h.i1 * W + w.i0] + w.w1 * q[h.i1 * W + w.i1]);
      }
  return {y};
}

const std::monostate kNone;

// `a`: attributes that accept a [1, 2, 3, 4] input; `empty`: ones with an output size 0.
std::vector<OpErrorSample> upsample_error_samples(const Attrs& a, const Attrs& empty) {
  using samples::make;
  return {
      {{make({2, 3, 4}, kFloat32)},
       a,
       "expected a 4-D input [N, C, H, W], got [2, 3, 4]",
       "input of rank 3"},
      {{make({1, 2, 3, 4}, kInt64)}, a, "expected a floating point input, got int64", "integers"},
      {{make({1, 2, 3, 4}, kFloat32)},
       empty,
       "input and output sizes should be greater than 0, but got input (H: 3, W: 4) output (H: 0, "
       "W: 8)",
       "output size 0"},
  };
}

[[maybe_unused]] const bool kNearest = pool::register_separable({
    "upsample_nearest2d",
    "upsample_nearest2d(Tensor self, int[] output_size, float? scales_h, float? scales_w) -> "
    "Tensor",
    [](const Tensor& x, const Attrs& a) { return upsample_sizes("upsample_nearest2d", x, a); },
    nearest_taps,
    [](ScalarType dt) {
      return std::vector<OpSample>{
          {{samples::make({2, 3, 3, 4}, dt)}, {V{6, 8}, kNone, kNone}, "x2"},
          {{samples::make({1, 2, 5, 4}, dt)}, {V{7, 3}, kNone, kNone}, "non-integer"},
          {{samples::make({1, 2, 5, 4}, dt, -3, 3, true)}, {V{7, 6}, 1.5, 1.5}, "scales"},
      };
    },
    nearest_reference,
    [] {
      return upsample_error_samples({V{6, 8}, kNone, kNone}, {V{0, 8}, kNone, kNone});
    },
});

[[maybe_unused]] const bool kBilinear = pool::register_separable({
    "upsample_bilinear2d",
    "upsample_bilinear2d(Tensor self, int[] output_size, bool align_corners, float? scales_h, "
    "float? scales_w) -> Tensor",
    [](const Tensor& x, const Attrs& a) { return upsample_sizes("upsample_bilinear2d", x, a); },
    bilinear_taps,
    [](ScalarType dt) {
      return std::vector<OpSample>{
          {{samples::make({2, 3, 3, 4}, dt)}, {V{6, 7}, false, kNone, kNone}, "up"},
          {{samples::make({1, 2, 3, 4}, dt)}, {V{5, 7}, true, kNone, kNone}, "align_corners"},
          {{samples::make({1, 2, 6, 5}, dt)}, {V{4, 3}, false, kNone, kNone}, "down"},
          {{samples::make({1, 2, 6, 5}, dt)}, {V{1, 3}, true, kNone, kNone}, "align_corners 1"},
          {{samples::make({1, 2, 4, 4}, dt, -3, 3, true)}, {V{6, 6}, false, 1.5, 1.5}, "scales"},
      };
    },
    bilinear_reference,
    [] {
      return upsample_error_samples({V{6, 8}, false, kNone, kNone}, {V{0, 8}, false, kNone, kNone});
    },
});

}  // namespace

Tensor upsample_nearest2d(const Tensor& input, IntArrayRef output_size) {
  return pool::as_batched("upsample_nearest2d", input, 2, [&](const Tensor& x) {
    return std::vector<Tensor>{
        pool::call_separable("upsample_nearest2d", x, {output_size.vec(), kNone, kNone})};
  })[0];
}

Tensor upsample_bilinear2d(const Tensor& input, IntArrayRef output_size, bool align_corners) {
  return pool::as_batched("upsample_bilinear2d", input, 2, [&](const Tensor& x) {
    return std::vector<Tensor>{pool::call_separable(
        "upsample_bilinear2d", x, {output_size.vec(), align_corners, kNone, kNone})};
  })[0];
}

Tensor interpolate(const Tensor& input, std::optional<std::vector<int64_t>> size,
                   std::optional<std::vector<double>> scale_factor, const std::string& mode,
                   std::optional<bool> align_corners) {
  const bool one_d = input.dim() == 3;
  KILN_CHECK(input.dim() == 3 || input.dim() == 4, "interpolate: expected a 3-D [N, C, L] or 4-D ",
             "[N, C, H, W] input, got ", input.sym_sizes());
  KILN_CHECK(size.has_value() != scale_factor.has_value(),
             "interpolate: only one of size or scale_factor should be defined (got ",
             size ? "both" : "neither", ")");
  const bool nearest = mode == "nearest";
  KILN_CHECK(nearest || (mode == "bilinear" && !one_d) || (mode == "linear" && one_d),
             "interpolate: mode '", mode, "' is not supported for a ", input.dim(),
             "-D input (supported: 'nearest', 'linear' for 3-D, 'bilinear' for 4-D)");
  KILN_CHECK(!(nearest && align_corners.has_value()),
             "interpolate: align_corners option can only be set with the interpolating modes: ",
             "linear | bilinear");
  const int64_t nd = input.dim() - 2;
  V out(2, 1);
  std::vector<AttrValue> scales(2, kNone);
  for (int64_t d = 0; d < nd; ++d) {
    const size_t slot = static_cast<size_t>(2 - nd + d);
    if (size) {
      KILN_CHECK(size->size() == 1 || static_cast<int64_t>(size->size()) == nd,
                 "interpolate: size shape must match input shape: input is ", nd, "D, size is ",
                 size->size());
      out[slot] = (*size)[size->size() == 1 ? 0 : static_cast<size_t>(d)];
    } else {
      KILN_CHECK(scale_factor->size() == 1 || static_cast<int64_t>(scale_factor->size()) == nd,
                 "interpolate: scale_factor shape must match input shape: input is ", nd,
                 "D, scale_factor is ", scale_factor->size());
      const double s = (*scale_factor)[scale_factor->size() == 1 ? 0 : static_cast<size_t>(d)];
      out[slot] = static_cast<int64_t>(std::floor(input.sym_size(d + 2).guard_int() * s));
      scales[slot] = s;
    }
  }
  Tensor x = one_d ? input.unsqueeze(2) : input;
  Tensor y = nearest
                 ? pool::call_separable("upsample_nearest2d", x, {out, scales[0], scales[1]})
                 : pool::call_separable("upsample_bilinear2d", x,
                                        {out, align_corners.value_or(false), scales[0], scales[1]});
  return one_d ? y.squeeze(IntArrayRef{2}) : y;
}

// pixel_shuffle: [*, C*r*r, H, W] -> [*, C, H*r, W*r] (a reshape, permute, reshape).
Tensor pixel_shuffle(const Tensor& input, int64_t r) {
  KILN_CHECK(input.dim() >= 3, "pixel_shuffle: expects input to have at least 3 dimensions, but ",
             "got input with ", input.dim(), " dimension(s)");
  KILN_CHECK(r > 0, "pixel_shuffle: expects a positive upscale_factor, but got ", r);
  const int64_t nd = input.dim();
  const SymInt c = input.sym_size(-3), h = input.sym_size(-2), w = input.sym_size(-1);
  KILN_CHECK(c % (r * r) == 0, "pixel_shuffle: expects its input's 'channel' dimension to be ",
             "divisible by the square of upscale_factor, but input.size(-3)=", c,
             " is not divisible by ", r * r);
  const SymShape sizes = input.sym_sizes();
  SymShape batch(sizes.begin(), sizes.end() - 3);
  SymShape split = batch;
  split.insert(split.end(), {c / (r * r), r, r, h, w});
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < nd - 3; ++i) perm.push_back(i);
  const int64_t b = nd - 3;
  perm.insert(perm.end(), {b, b + 3, b + 1, b + 4, b + 2});
  SymShape out = batch;
  out.insert(out.end(), {c / (r * r), h * r, w * r});
  return input.reshape(split).permute(perm).reshape(out);
}

// pixel_unshuffle: [*, C, H*r, W*r] -> [*, C*r*r, H, W].
Tensor pixel_unshuffle(const Tensor& input, int64_t r) {
  KILN_CHECK(input.dim() >= 3, "pixel_unshuffle: expects input to have at least 3 dimensions, ",
             "but got input with ", input.dim(), " dimension(s)");
  KILN_CHECK(r > 0, "pixel_unshuffle: expects a positive downscale_factor, but got ", r);
  const int64_t nd = input.dim();
  const SymInt c = input.sym_size(-3), h = input.sym_size(-2), w = input.sym_size(-1);
  KILN_CHECK(h % r == 0 && w % r == 0, "pixel_unshuffle: expects height and width to be ",
             "divisible by downscale_factor, but got height=", h, ", width=", w,
             ", downscale_factor=", r);
  const SymShape sizes = input.sym_sizes();
  SymShape batch(sizes.begin(), sizes.end() - 3);
  SymShape split = batch;
  split.insert(split.end(), {c, h / r, r, w / r, r});
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < nd - 3; ++i) perm.push_back(i);
  const int64_t b = nd - 3;
  perm.insert(perm.end(), {b, b + 2, b + 4, b + 1, b + 3});
  SymShape out = batch;
  out.insert(out.end(), {c * r * r, h / r, w / r});
  return input.reshape(split).permute(perm).reshape(out);
}

}  // namespace kiln
