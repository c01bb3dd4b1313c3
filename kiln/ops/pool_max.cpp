// max_pool2d_with_indices and adaptive_max_pool2d (values and flat per-plane indices), and the
// pair their gradients are made of: max_pool_backward scatters a gradient to the indices and
// max_pool_gather reads a tensor at them; each is the other's derivative.
#include <cmath>
#include <limits>
#include <vector>

#include "kiln/ops/conv.h"
#include "kiln/ops/conv_util.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/pool_util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

// One window's maximum and its flat index; the first NaN wins, as in PyTorch. Branch-free: which
// element wins is data, and a branch on it mispredicts half the time.
template <class T>
void window_max(const T* plane, int64_t width, pool::Span h, pool::Span w, T* value,
                int64_t* index) {
  T best = -std::numeric_limits<T>::infinity();
  int64_t at = h.begin * width + w.begin;
  for (int64_t ih = h.begin; ih < h.end; ih += h.step) {
    for (int64_t iw = w.begin; iw < w.end; iw += w.step) {
      const T v = plane[ih * width + iw];
      const bool take = (v > best) | ((v != v) & (best == best));
      best = take ? v : best;
      at = take ? ih * width + iw : at;
    }
  }
  *value = best;
  *index = at;
}

// Fills values and indices [N, C, OH, OW] from x [N, C, H, W]; span(dim, o) gives the windows.
template <class SpanFn>
void max_pool_kernel(const Tensor& input, Tensor& values, Tensor& indices, const SpanFn& span) {
  const Tensor x = pool::to_compute(input);
  const int64_t H = x.sym_size(2).guard_int(), W = x.sym_size(3).guard_int();
  const int64_t OH = values.sym_size(2).guard_int(), OW = values.sym_size(3).guard_int();
  const int64_t planes = x.sym_size(0).guard_int() * x.sym_size(1).guard_int();
  // The windows are the same in every plane: computed once, not per output element.
  std::vector<pool::Span> rows(OH), cols(OW);
  for (int64_t oh = 0; oh < OH; ++oh) rows[oh] = span(0, oh);
  for (int64_t ow = 0; ow < OW; ++ow) cols[ow] = span(1, ow);
  pool::compute_into(values, [&](Tensor& out) {
    pool::visit_compute(out.dtype(), [&]<class T>(T) {
      const T* px = x.data_ptr<T>();
      T* po = out.data_ptr<T>();
      int64_t* pi = indices.data_ptr<int64_t>();
      pool::for_planes(planes, OH * OW * 4, [&](int64_t p) {
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t j = (p * OH + oh) * OW + ow;
            window_max(px + p * H * W, W, rows[oh], cols[ow], po + j, pi + j);
          }
      });
    });
  });
}

Tensor gather_planes(const Tensor& x, const Tensor& indices);
Tensor scatter_planes(const Tensor& grad, const Tensor& indices, const SymShape& input_sizes);

std::vector<Tensor> max_pool_backward_formula(const BackwardContext& c) {
  return {scatter_planes(c.grad(0), c.output(1), c.input(0).sym_sizes())};
}

pool::Window2d max_window(const Attrs& a) {
  return pool::window2d("max_pool2d_with_indices", a.ints(0), a.ints(1), a.ints(2), a.ints(3));
}

TensorSpec index_spec(const SymShape& s, const Tensor& x) {
  return meta::spec(s, kInt64, x.device());
}

std::vector<Tensor> reference_max(const Tensor& input, int64_t OH, int64_t OW,
                                  const std::function<pool::Span(int, int64_t)>& span) {
  // Direct loops over every position with the -inf/NaN rule, on float64.
  Tensor x = input.to(kFloat64).contiguous();
  const int64_t N = x.sym_size(0).guard_int(), C = x.sym_size(1).guard_int();
  const int64_t H = x.sym_size(2).guard_int(), W = x.sym_size(3).guard_int();
  Tensor v = empty({N, C, OH, OW}, kFloat64), idx = empty({N, C, OH, OW}, kInt64);
  for (int64_t p = 0; p < N * C; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        const pool::Span sh = span(0, oh), sw = span(1, ow);
        double best = -INFINITY;
        int64_t at = -1;
        for (int64_t ih = 0; ih < H; ++ih)
          for (int64_t iw = 0; iw < W; ++iw) {
            const bool in_h = ih >= sh.begin && ih < sh.end && (ih - sh.begin) % sh.step == 0;
            const bool in_w = iw >= sw.begin && iw < sw.end && (iw - sw.begin) % sw.step == 0;
            if (!in_h || !in_w) continue;
            const double e = x.data_ptr<double>()[p * H * W + ih * W + iw];
            if (at < 0 || (!std::isnan(best) && (e > best || std::isnan(e)))) {
              best = e;
              at = ih * W + iw;
            }
          }
        v.data_ptr<double>()[(p * OH + oh) * OW + ow] = best;
        idx.data_ptr<int64_t>()[(p * OH + oh) * OW + ow] = at;
      }
  return {v, idx};
}

std::vector<OpSample> max_pool_samples(ScalarType dt) {
  using V = std::vector<int64_t>;
  auto mk = [dt](V shape, V k, V s, V p, V d, bool ceil, std::string desc, bool nc = false) {
    return OpSample{{samples::make(std::move(shape), dt, -3, 3, nc)}, {k, s, p, d, ceil}, desc};
  };
  return {
      mk({2, 3, 6, 6}, {2}, {2}, {0}, {1}, false, "2x2"),
      mk({1, 2, 7, 5}, {3, 2}, {2, 1}, {1, 0}, {1}, false, "stride padding"),
      mk({1, 2, 7, 7}, {3}, {2}, {1}, {1}, true, "ceil_mode"),
      mk({2, 2, 8, 7}, {2, 3}, {1}, {1}, {2, 2}, false, "dilation"),
      mk({2, 3, 5, 6}, {3}, {}, {0}, {1}, true, "default stride ceil non-contiguous", true),
  };
}

}  // namespace

KILN_REGISTER_OP(max_pool2d_with_indices)
    .schema(
        "max_pool2d_with_indices(Tensor self, int[] kernel_size, int[] stride, int[] padding, "
        "int[] dilation, bool ceil_mode) -> (Tensor, Tensor)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      SymShape s = pool::pooled_sizes("max_pool2d_with_indices", in[0], max_window(a), a.b(4));
      return std::vector<TensorSpec>{meta::spec(s, in[0].dtype(), in[0].device()),
                                     index_spec(s, in[0])};
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const pool::Window2d w = max_window(a);
      const int64_t H = in[0].sym_size(2).guard_int(), W = in[0].sym_size(3).guard_int();
      max_pool_kernel(in[0], out[0], out[1], [&](int d, int64_t o) {
        return pool::pool_span(o, d == 0 ? H : W, w.kernel[d], w.pad[d], w.stride[d],
                               w.dilation[d]);
      });
    })
    .save_outputs({1})  // the indices; the input only for its sizes
    .save_metadata()
    .backward(max_pool_backward_formula)
    .samples(max_pool_samples)
    .error_samples([] {
      using V = std::vector<int64_t>;
      auto attrs = [](V kernel, V stride, V padding, V dilation) {
        return Attrs{kernel, stride, padding, dilation, false};
      };
      auto s = pool::window_error_samples(attrs, /*with_dilation=*/true);
      const auto in = pool::input_error_samples(attrs({2}, {}, {0}, {1}));
      s.insert(s.end(), in.begin(), in.end());
      return s;
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const pool::Window2d w = max_window(a);
      SymShape s = pool::pooled_sizes("max_pool2d_with_indices", in[0], w, a.b(4));
      const int64_t H = in[0].sym_size(2).guard_int(), W = in[0].sym_size(3).guard_int();
      return reference_max(in[0], s[2].guard_int(), s[3].guard_int(), [&](int d, int64_t o) {
        const int64_t n = d == 0 ? H : W;
        const int64_t start = o * w.stride[d] - w.pad[d];
        // Unclipped window; positions outside [0, n) never match the loops above.
        int64_t b = start;
        while (b < 0) b += w.dilation[d];
        return pool::Span{b, std::min(n, start + (w.kernel[d] - 1) * w.dilation[d] + 1),
                          w.dilation[d]};
      });
    })
    .dtypes({kFloat64, kFloat32, kBFloat16})
    .lowering("extern:max_pool2d_with_indices");

KILN_REGISTER_OP(adaptive_max_pool2d)
    .schema("adaptive_max_pool2d(Tensor self, int[] output_size) -> (Tensor, Tensor)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      pool::check_input("adaptive_max_pool2d", in[0]);
      const std::vector<int64_t> o = a.ints(0);
      KILN_CHECK(o.size() == 2 && o[0] > 0 && o[1] > 0,
                 "adaptive_max_pool2d: output_size must be 2 positive values, got ",
                 IntArrayRef(o));
      SymShape s = {in[0].sym_size(0), in[0].sym_size(1), o[0], o[1]};
      return std::vector<TensorSpec>{meta::spec(s, in[0].dtype(), in[0].device()),
                                     index_spec(s, in[0])};
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const int64_t sizes[2] = {in[0].sym_size(2).guard_int(), in[0].sym_size(3).guard_int()};
      const std::vector<int64_t> o = a.ints(0);
      max_pool_kernel(in[0], out[0], out[1],
                      [&](int d, int64_t i) { return pool::adaptive_span(i, sizes[d], o[d]); });
    })
    .save_outputs({1})  // the indices; the input only for its sizes
    .save_metadata()
    .backward(max_pool_backward_formula)
    .error_samples([] {
      const std::vector<int64_t> two{2, 2};
      auto s = pool::input_error_samples({two});
      s.push_back({{samples::make({1, 2, 5, 5}, kFloat32)},
                   {std::vector<int64_t>{0, 2}},
                   "output_size must be 2 positive values, got [0, 2]",
                   "size 0"});
      return s;
    })
    .samples([](ScalarType dt) {
      return std::vector<OpSample>{
          {{samples::make({2, 3, 7, 5}, dt)}, {std::vector<int64_t>{3, 2}}, "non-divisible"},
          {{samples::make({1, 2, 4, 6}, dt)}, {std::vector<int64_t>{2, 3}}, "divisible"},
          {{samples::make({1, 2, 3, 3}, dt, -3, 3, true)},
           {std::vector<int64_t>{5, 4}},
           "upsampling non-contiguous"},
      };
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const std::vector<int64_t> o = a.ints(0);
      const int64_t sizes[2] = {in[0].sym_size(2).guard_int(), in[0].sym_size(3).guard_int()};
      return reference_max(in[0], o[0], o[1], [&](int d, int64_t i) {
        const double start = std::floor(static_cast<double>(i * sizes[d]) / o[d]);
        const double end = std::ceil(static_cast<double>((i + 1) * sizes[d]) / o[d]);
        return pool::Span{static_cast<int64_t>(start), static_cast<int64_t>(end), 1};
      });
    })
    .dtypes({kFloat64, kFloat32, kBFloat16})
    .lowering("extern:adaptive_max_pool2d");

// max_pool_backward(grad [N, C, OH, OW], indices, input_sizes) -> [N, C, H, W]
KILN_REGISTER_OP(max_pool_backward)
    .schema("max_pool_backward(Tensor grad, Tensor indices, SymInt[] input_sizes) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      KILN_CHECK(
          in[0].dim() == 4 && in[1].dtype() == kInt64 && in[0].sym_sizes() == in[1].sym_sizes(),
          "max_pool_backward: expected grad and int64 indices of one 4-D shape, got ",
          in[0].sym_sizes(), " and ", in[1].sym_sizes());
      return meta::one_spec(a.shape(0), in[0].dtype(), in[0].device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
      const Tensor g = pool::to_compute(in[0]);
      const Tensor idx = in[1].contiguous();
      const int64_t plane_in = out[0].sym_size(2).guard_int() * out[0].sym_size(3).guard_int();
      const int64_t plane_out = g.sym_size(2).guard_int() * g.sym_size(3).guard_int();
      const int64_t planes = g.sym_size(0).guard_int() * g.sym_size(1).guard_int();
      pool::compute_into(out[0], [&](Tensor& r) {
        pool::visit_compute(r.dtype(), [&]<class T>(T) {
          const T* pg = g.data_ptr<T>();
          const int64_t* pi = idx.data_ptr<int64_t>();
          T* pr = r.data_ptr<T>();
          pool::for_planes(planes, plane_in + plane_out, [&](int64_t p) {
            T* dst = pr + p * plane_in;
            std::fill(dst, dst + plane_in, T(0));
            for (int64_t j = p * plane_out; j < (p + 1) * plane_out; ++j) {
              KILN_CHECK(pi[j] >= 0 && pi[j] < plane_in, "max_pool_backward: index ", pi[j],
                         " is out of range for an input plane of ", plane_in, " elements");
              dst[pi[j]] += pg[j];
            }
          });
        });
      });
    })
    .save_inputs({1})
    .backward([](const BackwardContext& c) {
      return std::vector<Tensor>{gather_planes(c.grad(), c.input(1)), Tensor()};
    })
    .samples([](ScalarType dt) {
      Tensor idx = tensor(std::vector<int64_t>{0, 3, 3, 5, 8, 1, 2, 2}).view({1, 2, 2, 2});
      return std::vector<OpSample>{
          {{samples::make({1, 2, 2, 2}, dt), idx}, {SymShape{1, 2, 3, 3}}, "repeated indices"}};
    })
    .error_samples([] {
      const Tensor g = samples::make({1, 2, 2, 2}, kFloat32);
      const Attrs sizes{SymShape{1, 2, 3, 3}};
      return std::vector<OpErrorSample>{
          {{g, zeros({1, 2, 2}, kInt64)},
           sizes,
           "expected grad and int64 indices of one 4-D shape, got [1, 2, 2, 2] and [1, 2, 2]",
           "indices' shape"},
          {{g, tensor(std::vector<int64_t>{0, 3, 3, 9, 8, 1, 2, 2}).view({1, 2, 2, 2})},
           sizes,
           "index 9 is out of range for an input plane of 9 elements",
           "index out of range",
           /*in_meta=*/false},
      };
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      Tensor r = zeros(a.shape(0), kFloat64);
      Tensor g = in[0].to(kFloat64).contiguous();
      Tensor idx = in[1].contiguous();
      const int64_t pin = r.sym_numel() / (r.sym_size(0) * r.sym_size(1)).guard_int();
      const int64_t pout = g.sym_numel() / (g.sym_size(0) * g.sym_size(1)).guard_int();
      for (int64_t j = 0; j < g.sym_numel(); ++j)
        r.data_ptr<double>()[j / pout * pin + idx.data_ptr<int64_t>()[j]] +=
            g.data_ptr<double>()[j];
      return std::vector<Tensor>{r};
    })
    .lowering("extern:max_pool_backward");

// max_pool_gather(x [N, C, H, W], indices [N, C, OH, OW]) -> x at the indices
KILN_REGISTER_OP(max_pool_gather)
    .schema("max_pool_gather(Tensor self, Tensor indices) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs&) {
      KILN_CHECK(in[0].dim() == 4 && in[1].dim() == 4 && in[1].dtype() == kInt64,
                 "max_pool_gather: expected a 4-D input and 4-D int64 indices, got ",
                 in[0].sym_sizes(), " and ", in[1].sym_sizes());
      return meta::one_spec(in[1].sym_sizes(), in[0].dtype(), in[0].device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
      const Tensor x = pool::to_compute(in[0]);
      const Tensor idx = in[1].contiguous();
      const int64_t plane_in = x.sym_size(2).guard_int() * x.sym_size(3).guard_int();
      const int64_t plane_out = idx.sym_size(2).guard_int() * idx.sym_size(3).guard_int();
      const int64_t planes = idx.sym_size(0).guard_int() * idx.sym_size(1).guard_int();
      pool::compute_into(out[0], [&](Tensor& r) {
        pool::visit_compute(r.dtype(), [&]<class T>(T) {
          const T* px = x.data_ptr<T>();
          const int64_t* pi = idx.data_ptr<int64_t>();
          T* pr = r.data_ptr<T>();
          pool::for_planes(planes, plane_out, [&](int64_t p) {
            for (int64_t j = p * plane_out; j < (p + 1) * plane_out; ++j) {
              KILN_CHECK(pi[j] >= 0 && pi[j] < plane_in, "max_pool_gather: index ", pi[j],
                         " is out of range for an input plane of ", plane_in, " elements");
              pr[j] = px[p * plane_in + pi[j]];
            }
          });
        });
      });
    })
    .backward([](const BackwardContext& c) {
      return std::vector<Tensor>{scatter_planes(c.grad(), c.input(1), c.input(0).sym_sizes()),
                                 Tensor()};
    })
    .samples([](ScalarType dt) {
      Tensor idx = tensor(std::vector<int64_t>{0, 3, 3, 5, 8, 1, 2, 2}).view({1, 2, 2, 2});
      return std::vector<OpSample>{
          {{samples::make({1, 2, 3, 3}, dt), idx}, {}, "repeated indices"}};
    })
    .error_samples([] {
      const Tensor x = samples::make({1, 2, 3, 3}, kFloat32);
      return std::vector<OpErrorSample>{
          {{x, zeros({1, 2, 2}, kInt64)},
           {},
           "expected a 4-D input and 4-D int64 indices, got [1, 2, 3, 3] and [1, 2, 2]",
           "indices' shape"},
          {{x, tensor(std::vector<int64_t>{0, 3, 3, 5, 8, 1, 2, -1}).view({1, 2, 2, 2})},
           {},
           "index -1 is out of range for an input plane of 9 elements",
           "index out of range",
           /*in_meta=*/false},
      };
    })
    .reference([](const std::vector<Tensor>& in, const Attrs&) {
      Tensor x = in[0].to(kFloat64).contiguous();
      Tensor idx = in[1].contiguous();
      Tensor r = empty(idx.sym_sizes(), kFloat64);
      const int64_t pin = x.sym_numel() / (x.sym_size(0) * x.sym_size(1)).guard_int();
      const int64_t pout = r.sym_numel() / (r.sym_size(0) * r.sym_size(1)).guard_int();
      for (int64_t j = 0; j < r.sym_numel(); ++j)
        r.data_ptr<double>()[j] = x.data_ptr<double>()[j / pout * pin + idx.data_ptr<int64_t>()[j]];
      return std::vector<Tensor>{r};
    })
    .lowering("extern:max_pool_gather");

namespace {
Tensor gather_planes(const Tensor& x, const Tensor& indices) {
  static const OpDef& op = get_op("max_pool_gather");
  return call_op1(op, {x, indices}, {});
}
Tensor scatter_planes(const Tensor& grad, const Tensor& indices, const SymShape& input_sizes) {
  static const OpDef& op = get_op("max_pool_backward");
  return call_op1(op, {grad, indices}, {input_sizes});
}
}  // namespace

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode) {
  static const OpDef& op = get_op("max_pool2d_with_indices");
  auto r = pool::as_4d("max_pool2d", input, false, [&](const Tensor& x) {
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
  auto r = pool::as_4d("max_pool1d", input, true, [&](const Tensor& x) {
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
  auto r = pool::as_4d("adaptive_max_pool2d", input, false, [&](const Tensor& x) {
    return call_op(op, {x}, {conv::expand("adaptive_max_pool2d", "output_size", output_size, 2)});
  });
  return {r[0], r[1]};
}
std::tuple<Tensor, Tensor> adaptive_max_pool1d(const Tensor& input, IntArrayRef output_size) {
  static const OpDef& op = get_op("adaptive_max_pool2d");
  KILN_CHECK(output_size.size() == 1, "adaptive_max_pool1d: output_size must be a single int, got ",
             output_size);
  auto r = pool::as_4d("adaptive_max_pool1d", input, true, [&](const Tensor& x) {
    return call_op(op, {x}, {std::vector<int64_t>{1, output_size[0]}});
  });
  return {r[0], r[1]};
}

}  // namespace kiln
