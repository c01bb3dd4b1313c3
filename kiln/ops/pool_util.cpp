#include "kiln/ops/pool_util.h"

#include "kiln/ops/conv_util.h"
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

void check_input(const char* op, const Tensor& input) {
  KILN_CHECK(input.dim() == 4, op, ": expected a 4-D input [N, C, H, W], got ", input.sym_sizes());
  KILN_CHECK(input.sym_size(2) > 0 && input.sym_size(3) > 0, op,
             ": expected input with non-zero spatial dims, but got input of size ",
             input.sym_sizes());
  KILN_CHECK(is_floating_point(input.dtype()), op, ": expected a floating point input, got ",
             input.dtype());
}

std::vector<OpErrorSample> input_error_samples(const Attrs& a) {
  return {
      {{samples::make({2, 5, 5}, kFloat32)},
       a,
       "expected a 4-D input [N, C, H, W], got [2, 5, 5]",
       "input of rank 3"},
      {{samples::make({1, 2, 0, 5}, kFloat32)},
       a,
       "non-zero spatial dims, but got input of size [1, 2, 0, 5]",
       "empty plane"},
      {{samples::make({1, 2, 5, 5}, kInt64)},
       a,
       "expected a floating point input, got int64",
       "integers"},
  };
}

std::vector<OpErrorSample> window_error_samples(const WindowAttrs& attrs, bool with_dilation) {
  const Tensor x = samples::make({1, 2, 5, 5}, kFloat32);
  std::vector<OpErrorSample> s = {
      {{x},
       attrs({2, 2, 2}, {}, {0}, {1}),
       "but got kernel_size=[2, 2, 2]",
       "kernel_size of 3 values"},
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
      {{samples::make({1, 2, 2, 2}, kFloat32)},
       attrs({3}, {}, {0}, {1}),
       "given input size: (2x2x2). Calculated output size: (2x0x0). Output size is too small",
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

Window2d window2d(const char* op, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation) {
  Window2d w;
  const std::vector<int64_t> k = conv::expand(op, "kernel_size", kernel, 2);
  const std::vector<int64_t> s = stride.empty() ? k : conv::expand(op, "stride", stride, 2);
  const std::vector<int64_t> p = conv::expand(op, "padding", padding, 2);
  const std::vector<int64_t> d = conv::expand(op, "dilation", dilation, 2);
  for (int i = 0; i < 2; ++i) {
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

SymShape pooled_sizes(const char* op, const Tensor& input, const Window2d& w, bool ceil_mode) {
  check_input(op, input);
  SymShape out = {input.sym_size(0), input.sym_size(1)};
  for (int i = 0; i < 2; ++i)
    out.push_back(output_size(input.sym_size(i + 2), w.kernel[i], w.pad[i], w.stride[i],
                              w.dilation[i], ceil_mode));
  KILN_CHECK(out[2] > 0 && out[3] > 0, op, ": given input size: (", input.sym_size(1), "x",
             input.sym_size(2), "x", input.sym_size(3), "). Calculated output size: (",
             input.sym_size(1), "x", out[2], "x", out[3], "). Output size is too small");
  return out;
}

std::vector<Tensor> as_4d(const char* op, const Tensor& input, bool one_d,
                          const std::function<std::vector<Tensor>(const Tensor&)>& f) {
  const int64_t batched = one_d ? 3 : 4;
  KILN_CHECK(input.dim() == batched || input.dim() == batched - 1, op, ": expected ", batched - 1,
             "D or ", batched, "D input, but got input of size: ", input.sym_sizes());
  Tensor x = input.dim() == batched ? input : input.unsqueeze(0);
  if (one_d) x = x.unsqueeze(2);
  std::vector<Tensor> outs = f(x);
  for (Tensor& t : outs) {
    if (one_d) t = t.squeeze(IntArrayRef{2});
    if (input.dim() != batched) t = t.squeeze(IntArrayRef{0});
  }
  return outs;
}

}  // namespace kiln::pool
