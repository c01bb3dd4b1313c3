// avg_pool2d/3d and adaptive_avg_pool2d/3d (separable linear maps, see pool_linear.h) and the
// 1-d forms.
#include <cmath>

#include "kiln/ops/conv.h"
#include "kiln/ops/conv/util.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/pool/linear.h"
#include "kiln/ops/pool/util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

using V = std::vector<int64_t>;

const char* avg_name(int spatial) { return spatial == 3 ? "avg_pool3d" : "avg_pool2d"; }
const char* adaptive_name(int spatial) {
  return spatial == 3 ? "adaptive_avg_pool3d" : "adaptive_avg_pool2d";
}

// avg_pool attrs: kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override.
pool::Window avg_window(int spatial, const Attrs& a) {
  return pool::window(avg_name(spatial), spatial, a.ints(0), a.ints(1), a.ints(2), V{1});
}

// Window o along one dim: [start, end) before clipping (end may reach into the padding).
std::pair<int64_t, int64_t> avg_bounds(const pool::Window& w, int d, int64_t o, int64_t in) {
  const int64_t start = o * w.stride[d] - w.pad[d];
  return {start, std::min(start + w.kernel[d], in + w.pad[d])};
}

pool::Taps avg_taps(int spatial, const Attrs& a, int d, int64_t in, int64_t out) {
  const pool::Window w = avg_window(spatial, a);
  const bool include_pad = a.b(4);
  const std::optional<int64_t> divisor = a.opt_i(5);
  pool::Taps t;
  for (int64_t o = 0; o < out; ++o) {
    auto [start, end] = avg_bounds(w, d, o, in);
    const int64_t padded = end - start;
    const int64_t lo = std::max<int64_t>(start, 0), hi = std::min(end, in);
    // The divisor is a product over dims, so each dim carries its factor (an override: the
    // last dim's).
    double weight = 1.0 / static_cast<double>(include_pad ? padded : std::max<int64_t>(hi - lo, 1));
    if (divisor) weight = d == spatial - 1 ? 1.0 / static_cast<double>(*divisor) : 1.0;
    for (int64_t i = lo; i < hi; ++i) t.add(i, weight);
    t.close();
  }
  return t;
}

// Direct loops over every output element of a [N, C, <spatial>] float64 result: sum(x over
// window) / divisor(window), with window(d, o) giving [start, end) along dim d of the three
// (start < 0 or end > size: padding, not summed).
using Bounds = std::function<std::pair<int64_t, int64_t>(int d, int64_t o)>;
Tensor window_average(const Tensor& input, const SymShape& out_sizes, const Bounds& window,
                      const std::function<double(int64_t padded, int64_t count)>& divisor) {
  Tensor x = input.to(kFloat64).contiguous();
  Tensor y = empty(out_sizes, kFloat64);
  const pool::Extent ie = pool::extent(x), oe = pool::extent(y);
  const double* px = x.data_ptr<double>();
  double* py = y.data_ptr<double>();
  for (int64_t p = 0; p < pool::planes(x); ++p)
    for (int64_t od = 0; od < oe.size[0]; ++od)
      for (int64_t oh = 0; oh < oe.size[1]; ++oh)
        for (int64_t ow = 0; ow < oe.size[2]; ++ow) {
          auto [d0, d1] = window(0, od);
          auto [h0, h1] = window(1, oh);
          auto [w0, w1] = window(2, ow);
          int64_t count = 0;
          double sum = 0;
          for (int64_t id = d0; id < d1; ++id)
            for (int64_t ih = h0; ih < h1; ++ih)
              for (int64_t iw = w0; iw < w1; ++iw)
                if (id >= 0 && id < ie.size[0] && ih >= 0 && ih < ie.size[1] && iw >= 0 &&
                    iw < ie.size[2]) {
                  sum += px[((p * ie.size[0] + id) * ie.size[1] + ih) * ie.size[2] + iw];
                  ++count;
                }
          py[((p * oe.size[0] + od) * oe.size[1] + oh) * oe.size[2] + ow] =
              sum / divisor((d1 - d0) * (h1 - h0) * (w1 - w0), count);
        }
  return y;
}

std::vector<Tensor> avg_reference(int spatial, const std::vector<Tensor>& in, const Attrs& a) {
  const pool::Window w = avg_window(spatial, a);
  const SymShape s = pool::pooled_sizes(avg_name(spatial), in[0], w, a.b(3));
  const pool::Extent ie = pool::extent(in[0]);
  const int skip = pool::kMaxSpatial - spatial;
  auto window = [&](int d, int64_t o) {
    return d < skip ? std::pair<int64_t, int64_t>{0, 1} : avg_bounds(w, d - skip, o, ie.size[d]);
  };
  return {window_average(in[0], s, window, [&](int64_t padded, int64_t count) {
    return static_cast<double>(a.opt_i(5) ? *a.opt_i(5) : a.b(4) ? padded : count);
  })};
}

OpSample avg_sample(ScalarType dt, V shape, V k, V s, V p, bool ceil, bool include,
                    AttrValue divisor, std::string desc, bool nc = false) {
  return OpSample{{samples::make(std::move(shape), dt, -3, 3, nc)},
                  {k, s, p, ceil, include, divisor},
                  std::move(desc)};
}

std::vector<OpSample> avg_samples(ScalarType dt) {
  const std::monostate none;
  return {
      avg_sample(dt, {2, 3, 6, 6}, {2}, {2}, {0}, false, true, none, "2x2"),
      avg_sample(dt, {1, 2, 7, 5}, {3, 2}, {2, 1}, {1, 0}, false, true, none,
                 "padding include_pad"),
      avg_sample(dt, {1, 2, 7, 5}, {3, 2}, {2, 1}, {1, 1}, false, false, none,
                 "padding exclude_pad"),
      avg_sample(dt, {1, 2, 6, 6}, {3}, {2}, {1}, true, false, none, "ceil_mode exclude_pad"),
      avg_sample(dt, {1, 2, 6, 6}, {3}, {2}, {1}, true, true, none, "ceil_mode include_pad"),
      avg_sample(dt, {2, 2, 5, 6}, {2}, {}, {1}, false, true, int64_t{3},
                 "divisor_override non-contiguous", true),
  };
}

std::vector<OpSample> avg3d_samples(ScalarType dt) {
  const std::monostate none;
  return {
      avg_sample(dt, {2, 2, 4, 4, 4}, {2}, {2}, {0}, false, true, none, "2x2x2"),
      avg_sample(dt, {1, 2, 5, 4, 3}, {3, 2, 2}, {2, 1, 2}, {1, 0, 1}, false, true, none,
                 "padding include_pad"),
      avg_sample(dt, {1, 2, 5, 4, 3}, {3, 2, 2}, {2, 1, 2}, {1, 1, 0}, false, false, none,
                 "padding exclude_pad"),
      avg_sample(dt, {1, 1, 5, 5, 4}, {3}, {2}, {1}, true, false, none, "ceil_mode exclude_pad"),
      avg_sample(dt, {1, 1, 5, 4, 5}, {3}, {2}, {1}, true, true, none, "ceil_mode include_pad"),
      avg_sample(dt, {1, 2, 3, 4, 5}, {2}, {}, {1}, false, true, int64_t{3},
                 "divisor_override non-contiguous", true),
  };
}

pool::SeparableDef avg_def(int spatial, SampleFn samples) {
  const char* name = avg_name(spatial);
  return {
      name,
      std::string(name) +
          "(Tensor self, int[] kernel_size, int[] stride, int[] padding, bool ceil_mode, "
          "bool count_include_pad, int? divisor_override) -> Tensor",
      [spatial, name](const Tensor& x, const Attrs& a) {
        if (a.opt_i(5))
          KILN_CHECK(*a.opt_i(5) != 0, name,
                     ": divisor must be not zero, got divisor_override=", *a.opt_i(5));
        return pool::pooled_sizes(name, x, avg_window(spatial, a), a.b(3));
      },
      [spatial](const Attrs& a, int d, int64_t in, int64_t out) {
        return avg_taps(spatial, a, d, in, out);
      },
      std::move(samples),
      [spatial](const std::vector<Tensor>& in, const Attrs& a) {
        return avg_reference(spatial, in, a);
      },
      [spatial] {
        auto attrs = [](V kernel, V stride, V padding, V) {
          return Attrs{kernel, stride, padding, false, true, std::monostate{}};
        };
        auto s = pool::window_error_samples(attrs, /*with_dilation=*/false, spatial);
        const auto in = pool::input_error_samples(attrs({2}, {}, {0}, {}), spatial);
        s.insert(s.end(), in.begin(), in.end());
        s.push_back({{samples::make(pool::sample_shape(spatial), kFloat32)},
                     {V{2}, V{}, V{0}, false, true, int64_t{0}},
                     "divisor must be not zero, got divisor_override=0",
                     "divisor_override 0"});
        return s;
      },
      spatial,
  };
}

pool::Taps adaptive_taps(const Attrs&, int, int64_t in, int64_t out) {
  pool::Taps t;
  for (int64_t o = 0; o < out; ++o) {
    const pool::Span s = pool::adaptive_span(o, in, out);
    for (int64_t i = s.begin; i < s.end; ++i) t.add(i, 1.0 / static_cast<double>(s.end - s.begin));
    t.close();
  }
  return t;
}

std::vector<Tensor> adaptive_reference(const std::vector<Tensor>& in, const Attrs& a) {
  const V o = a.ints(0);
  SymShape s = {in[0].sym_size(0), in[0].sym_size(1)};
  for (int64_t v : o) s.push_back(v);
  const pool::Extent ie = pool::extent(in[0]);
  const int skip = pool::kMaxSpatial - static_cast<int>(o.size());
  auto window = [&](int d, int64_t i) {
    if (d < skip) return std::pair<int64_t, int64_t>{0, 1};
    const auto n = static_cast<double>(ie.size[d]), out = static_cast<double>(o[d - skip]);
    return std::pair<int64_t, int64_t>{static_cast<int64_t>(std::floor(double(i) * n / out)),
                                       static_cast<int64_t>(std::ceil(double(i + 1) * n / out))};
  };
  return {window_average(in[0], s, window,
                         [](int64_t padded, int64_t) { return static_cast<double>(padded); })};
}

SymShape adaptive_sizes(int spatial, const Tensor& input, const Attrs& a) {
  const char* op = adaptive_name(spatial);
  pool::check_input(op, input, spatial);
  const V o = a.ints(0);
  bool ok = static_cast<int>(o.size()) == spatial;
  for (int64_t v : o) ok = ok && v >= 0;
  KILN_CHECK(ok, op, ": output_size must be ", spatial, " non-negative values, got ",
             IntArrayRef(o));
  SymShape s = {input.sym_size(0), input.sym_size(1)};
  for (int64_t v : o) s.push_back(v);
  return s;
}

pool::SeparableDef adaptive_def(int spatial, SampleFn samples) {
  const char* name = adaptive_name(spatial);
  return {
      name,
      std::string(name) + "(Tensor self, int[] output_size) -> Tensor",
      [spatial](const Tensor& x, const Attrs& a) { return adaptive_sizes(spatial, x, a); },
      adaptive_taps,
      std::move(samples),
      adaptive_reference,
      [spatial] {
        auto s = pool::input_error_samples({V(static_cast<size_t>(spatial), 2)}, spatial);
        V bad(static_cast<size_t>(spatial), 2);
        bad.back() = -1;
        s.push_back({{samples::make(pool::sample_shape(spatial), kFloat32)},
                     {bad},
                     detail::str_cat("output_size must be ", spatial, " non-negative values, got ",
                                     IntArrayRef(bad)),
                     "negative size"});
        return s;
      },
      spatial,
  };
}

[[maybe_unused]] const bool kAvgPool = pool::register_separable(avg_def(2, avg_samples));
[[maybe_unused]] const bool kAvgPool3d = pool::register_separable(avg_def(3, avg3d_samples));

[[maybe_unused]] const bool kAdaptiveAvgPool =
    pool::register_separable(adaptive_def(2, [](ScalarType dt) {
      return std::vector<OpSample>{
          {{samples::make({2, 3, 7, 5}, dt)}, {V{3, 2}}, "non-divisible"},
          {{samples::make({1, 2, 4, 6}, dt)}, {V{2, 3}}, "divisible"},
          {{samples::make({1, 2, 5, 5}, dt)}, {V{1, 1}}, "global"},
          {{samples::make({1, 2, 3, 3}, dt, -3, 3, true)}, {V{5, 4}}, "upsampling non-contiguous"},
      };
    }));

[[maybe_unused]] const bool kAdaptiveAvgPool3d =
    pool::register_separable(adaptive_def(3, [](ScalarType dt) {
      return std::vector<OpSample>{
          {{samples::make({2, 2, 5, 7, 4}, dt)}, {V{2, 3, 3}}, "non-divisible"},
          {{samples::make({1, 2, 4, 4, 6}, dt)}, {V{2, 2, 3}}, "divisible"},
          {{samples::make({1, 2, 3, 4, 5}, dt)}, {V{1, 1, 1}}, "global"},
          {{samples::make({1, 2, 2, 3, 3}, dt, -3, 3, true)},
           {V{3, 5, 4}},
           "upsampling non-contiguous"},
      };
    }));

}  // namespace

Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  return pool::as_batched("avg_pool2d", input, 2, [&](const Tensor& x) {
    return std::vector<Tensor>{
        pool::call_separable("avg_pool2d", x,
                             {kernel_size.vec(), stride.vec(), padding.vec(), ceil_mode,
                              count_include_pad, opt_attr(divisor_override)})};
  })[0];
}

Tensor avg_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad) {
  auto one = [](const char* what, IntArrayRef v) {
    KILN_CHECK(v.size() == 1, "avg_pool1d: ", what, " must be a single int, got ", v);
    return v[0];
  };
  const int64_t k = one("kernel_size", kernel_size);
  const int64_t s = stride.empty() ? k : one("stride", stride);
  return pool::as_batched("avg_pool1d", input, 1, [&](const Tensor& x) {
    return std::vector<Tensor>{
        pool::call_separable("avg_pool2d", x,
                             {V{1, k}, V{1, s}, V{0, one("padding", padding)}, ceil_mode,
                              count_include_pad, std::monostate{}})};
  })[0];
}

Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size) {
  return pool::as_batched("adaptive_avg_pool2d", input, 2, [&](const Tensor& x) {
    return std::vector<Tensor>{
        pool::call_separable("adaptive_avg_pool2d", x,
                             {conv::expand("adaptive_avg_pool2d", "output_size", output_size, 2)})};
  })[0];
}

Tensor adaptive_avg_pool1d(const Tensor& input, IntArrayRef output_size) {
  KILN_CHECK(output_size.size() == 1, "adaptive_avg_pool1d: output_size must be a single int, got ",
             output_size);
  return pool::as_batched("adaptive_avg_pool1d", input, 1, [&](const Tensor& x) {
    return std::vector<Tensor>{
        pool::call_separable("adaptive_avg_pool2d", x, {V{1, output_size[0]}})};
  })[0];
}

Tensor avg_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  return pool::as_batched("avg_pool3d", input, 3, [&](const Tensor& x) {
    return std::vector<Tensor>{
        pool::call_separable("avg_pool3d", x,
                             {kernel_size.vec(), stride.vec(), padding.vec(), ceil_mode,
                              count_include_pad, opt_attr(divisor_override)})};
  })[0];
}

Tensor adaptive_avg_pool3d(const Tensor& input, IntArrayRef output_size) {
  return pool::as_batched("adaptive_avg_pool3d", input, 3, [&](const Tensor& x) {
    return std::vector<Tensor>{
        pool::call_separable("adaptive_avg_pool3d", x,
                             {conv::expand("adaptive_avg_pool3d", "output_size", output_size, 3)})};
  })[0];
}

}  // namespace kiln
