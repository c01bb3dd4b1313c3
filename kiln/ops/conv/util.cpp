#include "kiln/ops/conv/util.h"

#include <sstream>

#include "kiln/backend/cpu/dnnl_conv.h"
#include "kiln/ops/conv.h"
#include "kiln/ops/ops.h"

namespace kiln::conv {

std::vector<int64_t> expand(const char* op, const char* what, IntArrayRef v, int64_t nd) {
  KILN_CHECK(v.size() == 1 || static_cast<int64_t>(v.size()) == nd, op, ": expected ", what,
             " to be a single integer value or a list of ", nd, " values to match the ", nd,
             " spatial dimensions, but got ", what, "=", v);
  return v.size() == 1 ? std::vector<int64_t>(static_cast<size_t>(nd), v[0]) : v.vec();
}

Params params(const char* op, const Attrs& a, int64_t nd) {
  Params p;
  p.stride = expand(op, "stride", a.ints(0), nd);
  p.padding = expand(op, "padding", a.ints(1), nd);
  p.dilation = expand(op, "dilation", a.ints(2), nd);
  p.transposed = a.b(3);
  p.output_padding = expand(op, "output_padding", a.ints(4), nd);
  p.groups = a.i(5);
  for (int64_t d = 0; d < nd; ++d) {
    KILN_CHECK(p.stride[d] > 0, op,
               ": stride must be positive, got stride=", IntArrayRef(p.stride));
    KILN_CHECK(p.padding[d] >= 0, op,
               ": padding must be non-negative, got padding=", IntArrayRef(p.padding));
    KILN_CHECK(p.dilation[d] > 0, op,
               ": dilation must be positive, got dilation=", IntArrayRef(p.dilation));
    KILN_CHECK(p.output_padding[d] >= 0, op,
               ": output_padding must be non-negative, got output_padding=",
               IntArrayRef(p.output_padding));
  }
  KILN_CHECK(p.groups > 0, op, ": groups must be positive, got groups=", p.groups);
  return p;
}

Attrs attrs(const Params& p) {
  return {p.stride, p.padding, p.dilation, p.transposed, p.output_padding, p.groups};
}

namespace {
std::string list(const SymShape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? " x " : "") << s[i];
  os << ")";
  return os.str();
}
}  // namespace

SymShape output_sizes(const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias,
                      const Params& p) {
  const int64_t dim = input.dim();
  KILN_CHECK(dim >= 3 && dim <= 5, op, ": expected a batched input [N, C, *] with 1 to 3 spatial ",
             "dims, but got input of size ", input.sym_sizes());
  KILN_CHECK(weight.dim() == dim, op, ": expected ", dim, "-dimensional weight for ", dim,
             "-dimensional input ", input.sym_sizes(), ", but got ", weight.dim(),
             "-dimensional weight of size ", weight.sym_sizes());
  KILN_CHECK(input.dtype() == weight.dtype(), op, ": input type (", input.dtype(),
             ") and weight type (", weight.dtype(), ") should be the same");
  KILN_CHECK(is_floating_point(input.dtype()), op, ": expected a floating point input, got ",
             input.dtype());
  const int64_t nd = dim - 2;
  const SymInt channels = input.sym_size(1);
  SymInt out_channels;
  if (!p.transposed) {
    KILN_CHECK(weight.sym_size(0) % p.groups == 0, op, ": given groups=", p.groups,
               ", expected weight to be divisible by ", p.groups, " at dimension 0, but got weight",
               " of size ", weight.sym_sizes(), " instead");
    KILN_CHECK(channels == weight.sym_size(1) * p.groups, op, ": Given groups=", p.groups,
               ", weight of size ", weight.sym_sizes(), ", expected input ", input.sym_sizes(),
               " to have ", weight.sym_size(1) * p.groups, " channels, but got ", channels,
               " channels instead");
    out_channels = weight.sym_size(0);
  } else {
    KILN_CHECK(channels == weight.sym_size(0), op, ": given transposed=1, weight of size ",
               weight.sym_sizes(), ", expected input ", input.sym_sizes(), " to have ",
               weight.sym_size(0), " channels, but got ", channels, " channels instead");
    KILN_CHECK(weight.sym_size(0) % p.groups == 0, op, ": given groups=", p.groups,
               ", expected weight to be divisible by ", p.groups, " at dimension 0, but got weight",
               " of size ", weight.sym_sizes(), " instead");
    out_channels = weight.sym_size(1) * p.groups;
  }
  if (bias.defined()) {
    KILN_CHECK(bias.dim() == 1 && bias.sym_size(0) == out_channels, op, ": given weight of size ",
               weight.sym_sizes(), ", expected bias to be 1-dimensional with ", out_channels,
               " elements, but got bias of size ", bias.sym_sizes(), " instead");
    KILN_CHECK(bias.dtype() == input.dtype(), op, ": input type (", input.dtype(),
               ") and bias type (", bias.dtype(), ") should be the same");
  }
  SymShape out = {input.sym_size(0), out_channels};
  SymShape padded, kernel;
  bool fits = true;
  for (int64_t d = 0; d < nd; ++d) {
    const SymInt in = input.sym_size(d + 2);
    const SymInt k = (weight.sym_size(d + 2) - 1) * p.dilation[d] + 1;
    if (!p.transposed) {
      padded.push_back(in + 2 * p.padding[d]);
      kernel.push_back(k);
      if (padded.back() < k) fits = false;
      out.push_back((padded.back() - k) / p.stride[d] + 1);
    } else {
      KILN_CHECK(p.output_padding[d] < p.stride[d] || p.output_padding[d] < p.dilation[d], op,
                 ": output padding must be smaller than either stride or dilation, but got ",
                 "output_padding=", IntArrayRef(p.output_padding),
                 ", stride=", IntArrayRef(p.stride), ", dilation=", IntArrayRef(p.dilation));
      out.push_back((in - 1) * p.stride[d] - 2 * p.padding[d] + k + p.output_padding[d]);
      KILN_CHECK(out.back() > 0, op, ": given input size per channel ", list(input.sym_sizes()),
                 ", calculated output size ", out.back(), " at spatial dim ", d, " is too small");
    }
  }
  KILN_CHECK(fits, op, ": Calculated padded input size per channel: ", list(padded),
             ". Kernel size: ", list(kernel), ". Kernel size can't be greater than actual input ",
             "size");
  KILN_CHECK(p.transposed || p.output_padding == std::vector<int64_t>(nd, 0), op,
             ": output_padding is only supported for transposed convolutions, got "
             "output_padding=",
             IntArrayRef(p.output_padding));
  return out;
}

cpu::ConvGeometry geometry(IntArrayRef in, IntArrayRef out, IntArrayRef weight, const Params& p) {
  cpu::ConvGeometry g;
  g.nd = static_cast<int>(in.size()) - 2;
  g.batch = in[0];
  g.in_channels = in[1];
  g.out_channels = out[1];
  g.groups = p.groups;
  for (int d = 0; d < g.nd; ++d) {
    const int slot = 3 - g.nd + d;
    g.in[slot] = in[d + 2];
    g.out[slot] = out[d + 2];
    g.kernel[slot] = weight[d + 2];
    g.stride[slot] = p.stride[d];
    g.pad[slot] = p.padding[d];
    g.dilation[slot] = p.dilation[d];
  }
  return g;
}

ScalarType compute_dtype(ScalarType dtype) {
  if (dtype == kFloat32 || dtype == kFloat64) return dtype;
  if (dtype == kBFloat16 && cpu::onednn::has_conv(kBFloat16)) return dtype;
  return kFloat32;
}

Tensor data_grad(const Tensor& grad, const Tensor& weight, IntArrayRef input_sizes,
                 const Params& p) {
  Params t = p;
  t.transposed = true;
  const int64_t nd = grad.dim() - 2;
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t natural = (grad.sym_size(d + 2).guard_int() - 1) * p.stride[d] -
                            2 * p.padding[d] +
                            (weight.sym_size(d + 2).guard_int() - 1) * p.dilation[d] + 1;
    t.output_padding[d] = input_sizes[d + 2] - natural;
  }
  return convolution(grad, weight, {}, t.stride, t.padding, t.dilation, true, t.output_padding,
                     t.groups);
}

Tensor weight_grad(const Tensor& grad, const Tensor& input, IntArrayRef weight_sizes,
                   const Params& p) {
  static const OpDef& op = get_op("convolution_backward_weight");
  SymShape ws(weight_sizes.begin(), weight_sizes.end());
  return call_op1(op, {grad, input}, {p.stride, p.padding, p.dilation, p.groups, ws});
}

Tensor forward_fit(const Tensor& x, const Tensor& weight, IntArrayRef sizes, const Params& p) {
  Tensor y = convolution(x, weight, {}, p.stride, p.padding, p.dilation, false,
                         std::vector<int64_t>(p.stride.size(), 0), p.groups);
  for (int64_t d = 2; d < y.dim(); ++d) {
    if (y.sym_size(d).guard_int() > sizes[d]) y = y.narrow(d, 0, sizes[d]);
  }
  return y;
}

}  // namespace kiln::conv
