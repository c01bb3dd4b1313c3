#include "kiln/ops/pool/util.h"

#include "kiln/ops/conv/util.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln::pool {

SymInt output_size(const SymInt& in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                   bool ceil_mode) {
  SymInt out =
      (in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0)) / stride + 1;
  // The last window must start inside the input or the left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) out = out - 1;
  return out;
}

namespace {
const char* layout(int spatial) {
  return spatial == 3 ? "[N, C, D, H, W]" : spatial == 2 ? "[N, C, H, W]" : "[N, C, L]";
}
// "(CxHxW)": the sizes PyTorch's pooling errors print.
std::string by(const SymShape& s) {
  std::string r = "(";
  for (size_t i = 1; i < s.size(); ++i) r += detail::str_cat(i > 1 ? "x" : "", s[i]);
  return r + ")";
}
}  // namespace

void check_input(const char* op, const Tensor& input, int spatial) {
  KILN_CHECK(input.dim() == spatial + 2, op, ": expected a ", spatial + 2, "-D input ",
             layout(spatial), ", got ", input.sym_sizes());
  bool nonempty = true;
  for (int64_t d = 2; d < input.dim(); ++d) nonempty = nonempty && input.sym_size(d) > 0;
  KILN_CHECK(nonempty, op, ": expected input with non-zero spatial dims, but got input of size ",
             input.sym_sizes());
  KILN_CHECK(is_floating_point(input.dtype()), op, ": expected a floating point input, got ",
             input.dtype());
}

std::vector<int64_t> sample_shape(int spatial, int64_t size) {
  std::vector<int64_t> s = {1, 2};
  s.resize(static_cast<size_t>(spatial) + 2, size);
  return s;
}

std::vector<OpErrorSample> input_error_samples(const Attrs& a, int spatial) {
  const std::vector<int64_t> ok = sample_shape(spatial);
  const std::vector<int64_t> rank(ok.begin() + 1, ok.end());
  std::vector<int64_t> empty_plane = ok;
  empty_plane[2] = 0;
  return {
      {{samples::make(rank, kFloat32)},
       a,
       detail::str_cat("expected a ", spatial + 2, "-D input ", layout(spatial), ", got ",
                       IntArrayRef(rank)),
       "input of rank " + std::to_string(spatial + 1)},
      {{samples::make(empty_plane, kFloat32)},
       a,
       detail::str_cat("non-zero spatial dims, but got input of size ", IntArrayRef(empty_plane)),
       "empty plane"},
      {{samples::make(ok, kInt64)}, a, "expected a floating point input, got int64", "integers"},
  };
}

std::vector<OpErrorSample> window_error_samples(const WindowAttrs& attrs, bool with_dilation,
                                                int spatial) {
  const Tensor x = samples::make(sample_shape(spatial), kFloat32);
  const std::vector<int64_t> too_many(static_cast<size_t>(spatial) + 1, 2);
  const Tensor tiny = samples::make(sample_shape(spatial, 2), kFloat32);
  SymShape tiny_out = tiny.sym_sizes();
  for (int d = 0; d < spatial; ++d) tiny_out[static_cast<size_t>(d) + 2] = 0;
  std::vector<OpErrorSample> s = {
      {{x},
       attrs(too_many, {}, {0}, {1}),
       detail::str_cat("but got kernel_size=", IntArrayRef(too_many)),
       detail::str_cat("kernel_size of ", spatial + 1, " values")},
      {{x},
       attrs({0}, {}, {0}, {1}),
       "kernel_size should be greater than zero, but got "
       "kernel_size=[0]",
       "kernel_size 0"},
      {{x},
       attrs({2}, {0}, {0}, {1}),
       "stride should be greater than zero, but got stride=[0]",
       "stride 0"},
      {{x},
       attrs({2}, {}, {2}, {1}),
       "pad should be at most half of effective kernel size, but got pad=2, kernel_size=2 and "
       "dilation=1",
       "padding too large"},
      {{tiny},
       attrs({3}, {}, {0}, {1}),
       detail::str_cat("given input size: ", by(tiny.sym_sizes()),
                       ". Calculated output size: ", by(tiny_out), ". Output size is too small"),
       "window larger than the input"},
  };
  if (with_dilation)
    s.push_back({{x},
                 attrs({2}, {}, {0}, {0}),
                 "dilation should be greater than zero, but got dilation=[0]",
                 "dilation 0"});
  return s;
}

Span pool_span(int64_t o, int64_t in, int64_t kernel, int64_t pad, int64_t stride,
               int64_t dilation) {
  int64_t begin = o * stride - pad;
  const int64_t end = std::min(begin + (kernel - 1) * dilation + 1, in);
  while (begin < 0) begin += dilation;
  return {begin, end, dilation};
}

Span adaptive_span(int64_t o, int64_t in, int64_t out) {
  return {o * in / out, ((o + 1) * in + out - 1) / out, 1};
}

ScalarType compute_dtype(ScalarType t) { return t == kFloat64 ? kFloat64 : kFloat32; }

Tensor to_compute(const Tensor& t) {
  const ScalarType ct = compute_dtype(t.dtype());
  return (t.dtype() == ct ? t : t.to(ct)).contiguous();
}

void compute_into(Tensor& out, const std::function<void(Tensor&)>& body) {
  const ScalarType ct = compute_dtype(out.dtype());
  Tensor result = out.dtype() == ct && out.is_contiguous() ? out : empty(out.sym_sizes(), ct);
  body(result);
  if (!result.is_same(out)) out.copy_(result);
}

Window window(const char* op, int spatial, IntArrayRef kernel, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation) {
  Window w;
  w.spatial = spatial;
  const std::vector<int64_t> k = conv::expand(op, "kernel_size", kernel, spatial);
  const std::vector<int64_t> s = stride.empty() ? k : conv::expand(op, "stride", stride, spatial);
  const std::vector<int64_t> p = conv::expand(op, "padding", padding, spatial);
  const std::vector<int64_t> d = conv::expand(op, "dilation", dilation, spatial);
  for (size_t i = 0; i < static_cast<size_t>(spatial); ++i) {
    w.kernel[i] = k[i];
    w.stride[i] = s[i];
    w.pad[i] = p[i];
    w.dilation[i] = d[i];
    KILN_CHECK(k[i] > 0, op,
               ": kernel_size should be greater than zero, but got kernel_size=", kernel);
    KILN_CHECK(s[i] > 0, op, ": stride should be greater than zero, but got stride=", stride);
    KILN_CHECK(d[i] > 0, op, ": dilation should be greater than zero, but got dilation=", dilation);
    KILN_CHECK(p[i] >= 0 && p[i] <= ((k[i] - 1) * d[i] + 1) / 2, op,
               ": pad should be at most half of effective kernel size, but got pad=", p[i],
               ", kernel_size=", k[i], " and dilation=", d[i]);
  }
  return w;
}

SymShape pooled_sizes(const char* op, const Tensor& input, const Window& w, bool ceil_mode) {
  check_input(op, input, w.spatial);
  SymShape out = {input.sym_size(0), input.sym_size(1)};
  bool positive = true;
  for (int i = 0; i < w.spatial; ++i) {
    out.push_back(output_size(input.sym_size(i + 2), w.kernel[i], w.pad[i], w.stride[i],
                              w.dilation[i], ceil_mode));
    positive = positive && out.back() > 0;
  }
  KILN_CHECK(positive, op, ": given input size: ", by(input.sym_sizes()),
             ". Calculated output size: ", by(out), ". Output size is too small");
  return out;
}

Extent extent(const Tensor& t) {
  Extent e{{1, 1, 1}};
  const int64_t spatial = t.dim() - 2;
  for (int64_t d = 0; d < spatial; ++d)
    e.size[kMaxSpatial - spatial + d] = t.sym_size(d + 2).guard_int();
  return e;
}

int64_t planes(const Tensor& t) { return (t.sym_size(0) * t.sym_size(1)).guard_int(); }

std::vector<Tensor> as_batched(const char* op, const Tensor& input, int spatial,
                               const std::function<std::vector<Tensor>(const Tensor&)>& f) {
  const int64_t batched = spatial + 2;
  KILN_CHECK(input.dim() == batched || input.dim() == batched - 1, op, ": expected ", batched - 1,
             "D or ", batched, "D input, but got input of size: ", input.sym_sizes());
  Tensor x = input.dim() == batched ? input : input.unsqueeze(0);
  if (spatial == 1) x = x.unsqueeze(2);
  std::vector<Tensor> outs = f(x);
  for (Tensor& t : outs) {
    if (spatial == 1) t = t.squeeze(IntArrayRef{2});
    if (input.dim() != batched) t = t.squeeze(IntArrayRef{0});
  }
  return outs;
}

}  // namespace kiln::pool
