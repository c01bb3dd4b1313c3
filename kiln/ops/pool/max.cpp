// max_pool2d/3d_with_indices and adaptive_max_pool2d/3d: values and flat per-plane indices
// (their gradients scatter to the indices, see pool_max_scatter.cpp), and the 1-d forms.
#include <cmath>
#include <limits>
#include <vector>

#include "kiln/ops/conv.h"
#include "kiln/ops/conv/util.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/pool/planes.h"
#include "kiln/ops/pool/util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

using V = std::vector<int64_t>;
constexpr int kDims = pool::kMaxSpatial;

// The window of output o along dim d of the three (a 2-d entry's depth is {0, 1, 1}).
using SpanFn = std::function<pool::Span(int d, int64_t o)>;

// An entry's spans (over its own `spatial` dims) as spans over the three.
SpanFn over_three(int spatial, SpanFn span) {
  const int skip = kDims - spatial;
  return [skip, span = std::move(span)](int d, int64_t o) {
    return d < skip ? pool::Span{0, 1, 1} : span(d - skip, o);
  };
}

// One window's maximum and its flat index; the first NaN wins, as in PyTorch. Branch-free: which
// element wins is data, and a branch on it mispredicts half the time.
template <class T>
void window_max(const T* plane, const pool::Extent& e, const pool::Span* s, T* value,
                int64_t* index) {
  T best = -std::numeric_limits<T>::infinity();
  const int64_t H = e.size[1], W = e.size[2];
  int64_t at = (s[0].begin * H + s[1].begin) * W + s[2].begin;
  for (int64_t id = s[0].begin; id < s[0].end; id += s[0].step)
    for (int64_t ih = s[1].begin; ih < s[1].end; ih += s[1].step)
      for (int64_t iw = s[2].begin; iw < s[2].end; iw += s[2].step) {
        const int64_t i = (id * H + ih) * W + iw;
        const T v = plane[i];
        const bool take = (v > best) | ((v != v) & (best == best));
        best = take ? v : best;
        at = take ? i : at;
      }
  *value = best;
  *index = at;
}

// Fills values and indices [N, C, <out>] from x [N, C, <in>].
void max_pool_kernel(const Tensor& input, Tensor& values, Tensor& indices, const SpanFn& span) {
  const Tensor x = pool::to_compute(input);
  const pool::Extent in = pool::extent(x), out = pool::extent(values);
  // The windows are the same in every plane: computed once, not per output element.
  std::vector<pool::Span> spans[kDims];
  for (int d = 0; d < kDims; ++d)
    for (int64_t o = 0; o < out.size[d]; ++o) spans[d].push_back(span(d, o));
  pool::compute_into(values, [&](Tensor& result) {
    pool::visit_compute(result.dtype(), [&]<class T>(T) {
      const T* px = x.data_ptr<T>();
      T* po = result.data_ptr<T>();
      int64_t* pi = indices.data_ptr<int64_t>();
      pool::for_planes(pool::planes(x), out.numel() * 4, [&](int64_t p) {
        int64_t j = p * out.numel();
        for (int64_t od = 0; od < out.size[0]; ++od)
          for (int64_t oh = 0; oh < out.size[1]; ++oh)
            for (int64_t ow = 0; ow < out.size[2]; ++ow, ++j) {
              const pool::Span s[kDims] = {spans[0][od], spans[1][oh], spans[2][ow]};
              window_max(px + p * in.numel(), in, s, po + j, pi + j);
            }
      });
    });
  });
}

std::vector<Tensor> max_pool_backward_formula(const BackwardContext& c) {
  return {pool::scatter_planes(c.grad(0), c.output(1), c.input(0).sym_sizes())};
}

TensorSpec index_spec(const SymShape& s, const Tensor& x) {
  return meta::spec(s, kInt64, x.device());
}

// Direct loops over every input position with the -inf/NaN rule, on float64; span(d, o) over the
// three dims may reach outside the input (those positions never match).
std::vector<Tensor> reference_max(const Tensor& input, const SymShape& out_sizes,
                                  const SpanFn& span) {
  Tensor x = input.to(kFloat64).contiguous();
  Tensor v = empty(out_sizes, kFloat64), idx = empty(out_sizes, kInt64);
  const pool::Extent in = pool::extent(x), out = pool::extent(v);
  auto inside = [](int64_t i, const pool::Span& s) {
    return i >= s.begin && i < s.end && (i - s.begin) % s.step == 0;
  };
  int64_t j = 0;
  for (int64_t p = 0; p < pool::planes(x); ++p)
    for (int64_t od = 0; od < out.size[0]; ++od)
      for (int64_t oh = 0; oh < out.size[1]; ++oh)
        for (int64_t ow = 0; ow < out.size[2]; ++ow, ++j) {
          const pool::Span sd = span(0, od), sh = span(1, oh), sw = span(2, ow);
          double best = -INFINITY;
          int64_t at = -1;
          for (int64_t i = 0; i < in.numel(); ++i) {
            const int64_t id = i / (in.size[1] * in.size[2]);
            const int64_t ih = i / in.size[2] % in.size[1], iw = i % in.size[2];
            if (!inside(id, sd) || !inside(ih, sh) || !inside(iw, sw)) continue;
            const double e = x.data_ptr<double>()[p * in.numel() + i];
            if (at < 0 || (!std::isnan(best) && (e > best || std::isnan(e)))) {
              best = e;
              at = i;
            }
          }
          v.data_ptr<double>()[j] = best;
          idx.data_ptr<int64_t>()[j] = at;
        }
  return {v, idx};
}

const char* max_name(int spatial) {
  return spatial == 3 ? "max_pool3d_with_indices" : "max_pool2d_with_indices";
}
const char* adaptive_max_name(int spatial) {
  return spatial == 3 ? "adaptive_max_pool3d" : "adaptive_max_pool2d";
}

// max_pool attrs: kernel_size, stride, padding, dilation, ceil_mode.
pool::Window max_window(int spatial, const Attrs& a) {
  return pool::window(max_name(spatial), spatial, a.ints(0), a.ints(1), a.ints(2), a.ints(3));
}

OpSample max_sample(ScalarType dt, V shape, V k, V s, V p, V d, bool ceil, std::string desc,
                    bool nc = false) {
  return OpSample{{samples::make(std::move(shape), dt, -3, 3, nc)}, {k, s, p, d, ceil}, desc};
}

std::vector<OpSample> max_pool2d_samples(ScalarType dt) {
  return {
      max_sample(dt, {2, 3, 6, 6}, {2}, {2}, {0}, {1}, false, "2x2"),
      max_sample(dt, {1, 2, 7, 5}, {3, 2}, {2, 1}, {1, 0}, {1}, false, "stride padding"),
      max_sample(dt, {1, 2, 7, 7}, {3}, {2}, {1}, {1}, true, "ceil_mode"),
      max_sample(dt, {2, 2, 8, 7}, {2, 3}, {1}, {1}, {2, 2}, false, "dilation"),
      max_sample(dt, {2, 3, 5, 6}, {3}, {}, {0}, {1}, true, "default stride ceil non-contiguous",
                 true),
  };
}

std::vector<OpSample> max_pool3d_samples(ScalarType dt) {
  return {
      max_sample(dt, {2, 2, 4, 4, 4}, {2}, {2}, {0}, {1}, false, "2x2x2"),
      max_sample(dt, {1, 2, 5, 4, 5}, {3, 2, 3}, {2, 1, 2}, {1, 0, 1}, {1}, false,
                 "stride padding"),
      max_sample(dt, {1, 1, 5, 5, 5}, {3}, {2}, {1}, {1}, true, "ceil_mode"),
      max_sample(dt, {1, 2, 5, 6, 5}, {2, 2, 3}, {1}, {1}, {2, 2, 1}, false, "dilation"),
      max_sample(dt, {1, 2, 4, 5, 3}, {3}, {}, {0}, {1}, true, "default stride ceil non-contiguous",
                 true),
  };
}

bool register_max_pool(int spatial, SampleFn samples) {
  const char* name = max_name(spatial);
  register_op(name)
      .schema(std::string(name) +
              "(Tensor self, int[] kernel_size, int[] stride, int[] padding, int[] dilation, "
              "bool ceil_mode) -> (Tensor, Tensor)")
      .meta([spatial, name](const std::vector<Tensor>& in, const Attrs& a) {
        SymShape s = pool::pooled_sizes(name, in[0], max_window(spatial, a), a.b(4));
        return std::vector<TensorSpec>{meta::spec(s, in[0].dtype(), in[0].device()),
                                       index_spec(s, in[0])};
      })
      .cpu([spatial](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
        const pool::Window w = max_window(spatial, a);
        max_pool_kernel(in[0], out[0], out[1], over_three(spatial, [&](int d, int64_t o) {
                          return pool::pool_span(o, in[0].sym_size(d + 2).guard_int(), w.kernel[d],
                                                 w.pad[d], w.stride[d], w.dilation[d]);
                        }));
      })
      .save_outputs({1})  // the indices; the input only for its sizes
      .save_metadata()
      .backward(max_pool_backward_formula)
      .samples(std::move(samples))
      .error_samples([spatial] {
        auto attrs = [](V kernel, V stride, V padding, V dilation) {
          return Attrs{kernel, stride, padding, dilation, false};
        };
        auto s = pool::window_error_samples(attrs, /*with_dilation=*/true, spatial);
        const auto in = pool::input_error_samples(attrs({2}, {}, {0}, {1}), spatial);
        s.insert(s.end(), in.begin(), in.end());
        return s;
      })
      .reference([spatial, name](const std::vector<Tensor>& in, const Attrs& a) {
        const pool::Window w = max_window(spatial, a);
        const SymShape s = pool::pooled_sizes(name, in[0], w, a.b(4));
        return reference_max(
            in[0], s, over_three(spatial, [&](int d, int64_t o) {
              // Unclipped at the end; the start moved into the input.
              const int64_t start = o * w.stride[d] - w.pad[d];
              int64_t b = start;
              while (b < 0) b += w.dilation[d];
              return pool::Span{b, start + (w.kernel[d] - 1) * w.dilation[d] + 1, w.dilation[d]};
            }));
      })
      .dtypes({kFloat64, kFloat32, kBFloat16})
      .lowering(std::string("extern:") + name);
  return true;
}

SymShape adaptive_max_sizes(int spatial, const Tensor& input, const Attrs& a) {
  const char* name = adaptive_max_name(spatial);
  pool::check_input(name, input, spatial);
  const V o = a.ints(0);
  bool ok = static_cast<int>(o.size()) == spatial;
  for (int64_t v : o) ok = ok && v > 0;
  KILN_CHECK(ok, name, ": output_size must be ", spatial, " positive values, got ", IntArrayRef(o));
  SymShape s = {input.sym_size(0), input.sym_size(1)};
  for (int64_t v : o) s.push_back(v);
  return s;
}

bool register_adaptive_max_pool(int spatial, SampleFn samples) {
  const char* name = adaptive_max_name(spatial);
  register_op(name)
      .schema(std::string(name) + "(Tensor self, int[] output_size) -> (Tensor, Tensor)")
      .meta([spatial](const std::vector<Tensor>& in, const Attrs& a) {
        const SymShape s = adaptive_max_sizes(spatial, in[0], a);
        return std::vector<TensorSpec>{meta::spec(s, in[0].dtype(), in[0].device()),
                                       index_spec(s, in[0])};
      })
      .cpu([spatial](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
        const V o = a.ints(0);
        max_pool_kernel(in[0], out[0], out[1], over_three(spatial, [&](int d, int64_t i) {
                          return pool::adaptive_span(i, in[0].sym_size(d + 2).guard_int(), o[d]);
                        }));
      })
      .save_outputs({1})  // the indices; the input only for its sizes
      .save_metadata()
      .backward(max_pool_backward_formula)
      .error_samples([spatial] {
        const V two(static_cast<size_t>(spatial), 2);
        auto s = pool::input_error_samples({two}, spatial);
        V bad = two;
        bad[0] = 0;
        s.push_back({{samples::make(pool::sample_shape(spatial), kFloat32)},
                     {bad},
                     detail::str_cat("output_size must be ", spatial, " positive values, got ",
                                     IntArrayRef(bad)),
                     "size 0"});
        return s;
      })
      .samples(std::move(samples))
      .reference([spatial](const std::vector<Tensor>& in, const Attrs& a) {
        const V o = a.ints(0);
        return reference_max(
            in[0], adaptive_max_sizes(spatial, in[0], a),
            over_three(spatial, [&](int d, int64_t i) {
              const auto n = static_cast<double>(in[0].sym_size(d + 2).guard_int());
              const auto out = static_cast<double>(o[d]);
              return pool::Span{static_cast<int64_t>(std::floor(double(i) * n / out)),
                                static_cast<int64_t>(std::ceil(double(i + 1) * n / out)), 1};
            }));
      })
      .dtypes({kFloat64, kFloat32, kBFloat16})
      .lowering(std::string("extern:") + name);
  return true;
}

[[maybe_unused]] const bool kMaxPool2d = register_max_pool(2, max_pool2d_samples);
[[maybe_unused]] const bool kMaxPool3d = register_max_pool(3, max_pool3d_samples);

[[maybe_unused]] const bool kAdaptiveMaxPool2d = register_adaptive_max_pool(2, [](ScalarType dt) {
  return std::vector<OpSample>{
      {{samples::make({2, 3, 7, 5}, dt)}, {V{3, 2}}, "non-divisible"},
      {{samples::make({1, 2, 4, 6}, dt)}, {V{2, 3}}, "divisible"},
      {{samples::make({1, 2, 3, 3}, dt, -3, 3, true)}, {V{5, 4}}, "upsampling non-contiguous"},
  };
});
[[maybe_unused]] const bool kAdaptiveMaxPool3d = register_adaptive_max_pool(3, [](ScalarType dt) {
  return std::vector<OpSample>{
      {{samples::make({2, 2, 5, 7, 4}, dt)}, {V{2, 3, 3}}, "non-divisible"},
      {{samples::make({1, 2, 4, 4, 6}, dt)}, {V{2, 2, 3}}, "divisible"},
      {{samples::make({1, 2, 2, 3, 3}, dt, -3, 3, true)},
       {V{3, 5, 4}},
       "upsampling non-contiguous"},
  };
});

}  // namespace

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode) {
  static const OpDef& op = get_op("max_pool2d_with_indices");
  auto r = pool::as_batched("max_pool2d", input, 2, [&](const Tensor& x) {
    return call_op(op, {x},
                   {kernel_size.vec(), stride.vec(), padding.vec(), dilation.vec(), ceil_mode});
  });
  return {r[0], r[1]};
}

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode) {
  static const OpDef& op = get_op("max_pool2d_with_indices");
  auto one = [](const char* what, IntArrayRef v) {
    KILN_CHECK(v.size() == 1, "max_pool1d: ", what, " must be a single int, got ", v);
    return std::vector<int64_t>{1, v[0]};
  };
  auto r = pool::as_batched("max_pool1d", input, 1, [&](const Tensor& x) {
    std::vector<int64_t> s =
        stride.empty() ? one("kernel_size", kernel_size) : one("stride", stride);
    std::vector<int64_t> p = one("padding", padding);
    p[0] = 0;
    return call_op(op, {x},
                   {one("kernel_size", kernel_size), s, p, one("dilation", dilation), ceil_mode});
  });
  return {r[0], r[1]};
}

Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(
      max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode));
}
Tensor max_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(
      max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode));
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size) {
  static const OpDef& op = get_op("adaptive_max_pool2d");
  auto r = pool::as_batched("adaptive_max_pool2d", input, 2, [&](const Tensor& x) {
    return call_op(op, {x}, {conv::expand("adaptive_max_pool2d", "output_size", output_size, 2)});
  });
  return {r[0], r[1]};
}
std::tuple<Tensor, Tensor> adaptive_max_pool1d(const Tensor& input, IntArrayRef output_size) {
  static const OpDef& op = get_op("adaptive_max_pool2d");
  KILN_CHECK(output_size.size() == 1, "adaptive_max_pool1d: output_size must be a single int, got ",
             output_size);
  auto r = pool::as_batched("adaptive_max_pool1d", input, 1, [&](const Tensor& x) {
    return call_op(op, {x}, {std::vector<int64_t>{1, output_size[0]}});
  });
  return {r[0], r[1]};
}

std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode) {
  static const OpDef& op = get_op("max_pool3d_with_indices");
  auto r = pool::as_batched("max_pool3d", input, 3, [&](const Tensor& x) {
    return call_op(op, {x},
                   {kernel_size.vec(), stride.vec(), padding.vec(), dilation.vec(), ceil_mode});
  });
  return {r[0], r[1]};
}

Tensor max_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(
      max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode));
}

std::tuple<Tensor, Tensor> adaptive_max_pool3d(const Tensor& input, IntArrayRef output_size) {
  static const OpDef& op = get_op("adaptive_max_pool3d");
  auto r = pool::as_batched("adaptive_max_pool3d", input, 3, [&](const Tensor& x) {
    return call_op(op, {x}, {conv::expand("adaptive_max_pool3d", "output_size", output_size, 3)});
  });
  return {r[0], r[1]};
}

}  // namespace kiln
