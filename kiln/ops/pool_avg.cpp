// avg_pool2d and adaptive_avg_pool2d (separable linear maps, see pool_linear.h) and their 1-d
// forms.
#include <cmath>

#include "kiln/ops/conv.h"
#include "kiln/ops/conv_util.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/pool_linear.h"
#include "kiln/ops/pool_util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

using V = std::vector<int64_t>;

// avg_pool2d attrs: kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override.
pool::Window2d avg_window(const Attrs& a) {
  return pool::window2d("avg_pool2d", a.ints(0), a.ints(1), a.ints(2), V{1});
}

// Window o along one dim: [start, end) before clipping (end may reach into the padding).
std::pair<int64_t, int64_t> avg_bounds(const pool::Window2d& w, int d, int64_t o, int64_t in) {
  const int64_t start = o * w.stride[d] - w.pad[d];
  return {start, std::min(start + w.kernel[d], in + w.pad[d])};
}

pool::Taps avg_taps(const Attrs& a, int d, int64_t in, int64_t out) {
  const pool::Window2d w = avg_window(a);
  const bool include_pad = a.b(4);
  const std::optional<int64_t> divisor = a.opt_i(5);
  pool::Taps t;
  for (int64_t o = 0; o < out; ++o) {
    auto [start, end] = avg_bounds(w, d, o, in);
    const int64_t padded = end - start;
    const int64_t lo = std::max<int64_t>(start, 0), hi = std::min(end, in);
    // The divisor is a product over dims, so each dim carries its factor (an override: W's).
    double weight = 1.0 / static_cast<double>(include_pad ? padded : std::max<int64_t>(hi - lo, 1));
    if (divisor) weight = d == 1 ? 1.0 / static_cast<double>(*divisor) : 1.0;
    for (int64_t i = lo; i < hi; ++i) t.add(i, weight);
    t.close();
  }
  return t;
}

std::vector<Tensor> avg_reference(const std::vector<Tensor>& in, const Attrs& a) {
  const pool::Window2d w = avg_window(a);
  const SymShape s = pool::pooled_sizes("avg_pool2d", in[0], w, a.b(3));
  Tensor x = in[0].to(kFloat64).contiguous();
  const int64_t P = (x.sym_size(0) * x.sym_size(1)).guard_int();
  const int64_t H = x.sym_size(2).guard_int(), W = x.sym_size(3).guard_int();
  const int64_t OH = s[2].guard_int(), OW = s[3].guard_int();
  Tensor y = empty(s, kFloat64);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        auto [h0, h1] = avg_bounds(w, 0, oh, H);
        auto [w0, w1] = avg_bounds(w, 1, ow, W);
        int64_t pool_size = (h1 - h0) * (w1 - w0), count = 0;
        double sum = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw)
            if (ih >= 0 && ih < H && iw >= 0 && iw < W) {
              sum += x.data_ptr<double>()[(p * H + ih) * W + iw];
              ++count;
            }
        const int64_t div = a.opt_i(5) ? *a.opt_i(5) : a.b(4) ? pool_size : count;
        y.data_ptr<double>()[(p * OH + oh) * OW + ow] = sum / static_cast<double>(div);
      }
  return {y};
}

std::vector<OpSample> avg_samples(ScalarType dt) {
  const std::monostate none;
  auto mk = [&](V shape, V k, V s, V p, bool ceil, bool include, AttrValue div, std::string desc,
                bool nc = false) {
    return OpSample{
        {samples::make(std::move(shape), dt, -3, 3, nc)}, {k, s, p, ceil, include, div}, desc};
  };
  return {
      mk({2, 3, 6, 6}, {2}, {2}, {0}, false, true, none, "2x2"),
      mk({1, 2, 7, 5}, {3, 2}, {2, 1}, {1, 0}, false, true, none, "padding include_pad"),
      mk({1, 2, 7, 5}, {3, 2}, {2, 1}, {1, 1}, false, false, none, "padding exclude_pad"),
      mk({1, 2, 6, 6}, {3}, {2}, {1}, true, false, none, "ceil_mode exclude_pad"),
      mk({1, 2, 6, 6}, {3}, {2}, {1}, true, true, none, "ceil_mode include_pad"),
      mk({2, 2, 5, 6}, {2}, {}, {1}, false, true, int64_t{3}, "divisor_override non-contiguous",
         true),
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
  Tensor x = in[0].to(kFloat64).contiguous();
  const V o = a.ints(0);
  const int64_t N = x.sym_size(0).guard_int(), C = x.sym_size(1).guard_int();
  const int64_t H = x.sym_size(2).guard_int(), W = x.sym_size(3).guard_int();
  Tensor y = empty({N, C, o[0], o[1]}, kFloat64);
  for (int64_t p = 0; p < N * C; ++p)
    for (int64_t oh = 0; oh < o[0]; ++oh)
      for (int64_t ow = 0; ow < o[1]; ++ow) {
        const auto h0 = static_cast<int64_t>(std::floor(double(oh * H) / double(o[0])));
        const auto h1 = static_cast<int64_t>(std::ceil(double((oh + 1) * H) / double(o[0])));
        const auto w0 = static_cast<int64_t>(std::floor(double(ow * W) / double(o[1])));
        const auto w1 = static_cast<int64_t>(std::ceil(double((ow + 1) * W) / double(o[1])));
        double sum = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) sum += x.data_ptr<double>()[(p * H + ih) * W + iw];
        y.data_ptr<double>()[(p * o[0] + oh) * o[1] + ow] =
            sum / static_cast<double>((h1 - h0) * (w1 - w0));
      }
  return {y};
}

SymShape adaptive_sizes(const char* op, const Tensor& input, const Attrs& a) {
  pool::check_input(op, input);
  const V o = a.ints(0);
  KILN_CHECK(o.size() == 2 && o[0] >= 0 && o[1] >= 0, op,
             ": output_size must be 2 non-negative values, got ", IntArrayRef(o));
  return {input.sym_size(0), input.sym_size(1), o[0], o[1]};
}

[[maybe_unused]] const bool kAvgPool = pool::register_separable({
    "avg_pool2d",
    "avg_pool2d(Tensor self, int[] kernel_size, int[] stride, int[] padding, bool ceil_mode, "
    "bool count_include_pad, int? divisor_override) -> Tensor",
    [](const Tensor& x, const Attrs& a) {
      if (a.opt_i(5))
        KILN_CHECK(*a.opt_i(5) != 0,
                   "avg_pool2d: divisor must be not zero, got divisor_override=", *a.opt_i(5));
      return pool::pooled_sizes("avg_pool2d", x, avg_window(a), a.b(3));
    },
    avg_taps,
    avg_samples,
    avg_reference,
    [] {
      auto attrs = [](V kernel, V stride, V padding, V) {
        return Attrs{kernel, stride, padding, false, true, std::monostate{}};
      };
      auto s = pool::window_error_samples(attrs, /*with_dilation=*/false);
      const auto in = pool::input_error_samples(attrs({2}, {}, {0}, {}));
      s.insert(s.end(), in.begin(), in.end());
      s.push_back({{samples::make({1, 2, 5, 5}, kFloat32)},
                   {V{2}, V{}, V{0}, false, true, int64_t{0}},
                   "divisor must be not zero, got divisor_override=0",
                   "divisor_override 0"});
      return s;
    },
});

[[maybe_unused]] const bool kAdaptiveAvgPool = pool::register_separable({
    "adaptive_avg_pool2d",
    "adaptive_avg_pool2d(Tensor self, int[] output_size) -> Tensor",
    [](const Tensor& x, const Attrs& a) { return adaptive_sizes("adaptive_avg_pool2d", x, a); },
    adaptive_taps,
    [](ScalarType dt) {
      return std::vector<OpSample>{
          {{samples::make({2, 3, 7, 5}, dt)}, {V{3, 2}}, "non-divisible"},
          {{samples::make({1, 2, 4, 6}, dt)}, {V{2, 3}}, "divisible"},
          {{samples::make({1, 2, 5, 5}, dt)}, {V{1, 1}}, "global"},
          {{samples::make({1, 2, 3, 3}, dt, -3, 3, true)}, {V{5, 4}}, "upsampling non-contiguous"},
      };
    },
    adaptive_reference,
    [] {
      auto s = pool::input_error_samples({V{2, 2}});
      s.push_back({{samples::make({1, 2, 5, 5}, kFloat32)},
                   {V{2, -1}},
                   "output_size must be 2 non-negative values, got [2, -1]",
                   "negative size"});
      return s;
    },
});

}  // namespace

Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  return pool::as_4d("avg_pool2d", input, false, [&](const Tensor& x) {
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
  return pool::as_4d("avg_pool1d", input, true, [&](const Tensor& x) {
    return std::vector<Tensor>{
        pool::call_separable("avg_pool2d", x,
                             {V{1, k}, V{1, s}, V{0, one("padding", padding)}, ceil_mode,
                              count_include_pad, std::monostate{}})};
  })[0];
}

Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size) {
  return pool::as_4d("adaptive_avg_pool2d", input, false, [&](const Tensor& x) {
    return std::vector<Tensor>{
        pool::call_separable("adaptive_avg_pool2d", x,
                             {conv::expand("adaptive_avg_pool2d", "output_size", output_size, 2)})};
  })[0];
}

Tensor adaptive_avg_pool1d(const Tensor& input, IntArrayRef output_size) {
  KILN_CHECK(output_size.size() == 1, "adaptive_avg_pool1d: output_size must be a single int, got ",
             output_size);
  return pool::as_4d("adaptive_avg_pool1d", input, true, [&](const Tensor& x) {
    return std::vector<Tensor>{
        pool::call_separable("adaptive_avg_pool2d", x, {V{1, output_size[0]}})};
  })[0];
}

}  // namespace kiln
