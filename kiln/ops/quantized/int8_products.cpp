// int8_linear and int8_conv2d: uint8 activations times int8 weights, summed in int32 on oneDNN
// (VNNI where the CPU has it), scaled per output channel into float32. What PyTorch 2's x86
// inductor lowering makes of dequantize -> linear/conv (onednn.qlinear_pointwise).
//
//   y[n] = xs * ws[n] * (sum (x - zp) * w + b[n] / (xs * ws[n]))
// oneDNN takes the zero point (a convolution pads with it: the real value 0) and adds the real
// bias, in units of the int32 sum, before it scales.
#include "kiln/backend/cpu/dnnl_int8.h"
#include "kiln/ops/conv.h"
#include "kiln/ops/conv/util.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/quantized.h"
#include "kiln/ops/quantized/util.h"
#include "kiln/ops/samples.h"
#include "kiln/ops/shape.h"

namespace kiln {
namespace {

void check_operands(const char* op, const Tensor& x, const Tensor& w, const Tensor& w_scales,
                    const Tensor& bias, const Attrs& a) {
  KILN_CHECK(x.dtype() == kUInt8 && w.dtype() == kInt8, op,
             ": expected a uint8 input and an int8 weight, but got ", x.dtype(), " and ",
             w.dtype());
  quantized::check_scale_and_zero_point(op, a.f(0), a.i(1), 0, 255);
  const SymInt out_features = w.dim() > 0 ? w.sym_size(0) : SymInt(0);
  KILN_CHECK(
      w_scales.dim() == 1 && w_scales.sym_size(0) == out_features && w_scales.is_floating_point(),
      op, ": expected floating point weight_scales of shape [", out_features,
      "] (one per output channel), but got ", w_scales.dtype(), w_scales.sym_sizes());
  KILN_CHECK(
      !bias.defined() ||
          (bias.dim() == 1 && bias.sym_size(0) == out_features && bias.dtype() == kFloat32),
      op, ": expected a float32 bias of shape [", out_features, "], but got ",
      bias.defined() ? ::kiln::detail::str_cat(bias.dtype(), bias.sym_sizes()) : std::string());
}

// Per output channel n, for input scale xs:
//   weight_scales  ws[n]
//   bias           b[n] / (xs * ws[n]), the real bias in units of the int32 sum
struct Folded {
  std::vector<float> weight_scales, bias;
  double input_scale;
};

Folded fold(const char* op, const Tensor& w, const Tensor& w_scales, const Tensor& bias,
            double x_scale) {
  const int64_t n = w.size(0);
  const std::vector<double> ws = quantized::to_doubles(w_scales);
  const std::vector<double> b =
      bias.defined() ? quantized::to_doubles(bias) : std::vector<double>(n, 0.0);
  Folded f{std::vector<float>(n), std::vector<float>(n), x_scale};
  for (int64_t o = 0; o < n; ++o) {
    KILN_CHECK(std::isfinite(ws[o]) && ws[o] > 0, op,
               ": expected positive finite weight scales, but got ", ws[o], " at channel ", o);
    f.weight_scales[o] = static_cast<float>(ws[o]);
    f.bias[o] = static_cast<float>(b[o] / (x_scale * ws[o]));
  }
  return f;
}

// Without oneDNN's int8 products: y = xs * ws[n] * (acc - zp * sum_k w[n, k] + bias[n]) from
// float32 sums `acc` of the integers x * w (exact below 2^24; a convolution's input padded with
// the zero point), channels along channel_dim. w is [out, ...] contiguous.
void scale_float_sums(Tensor& acc, const Folded& f, const Tensor& w, int64_t zero_point,
                      int64_t channel_dim) {
  std::vector<int64_t> shape(acc.dim(), 1);
  shape[channel_dim] = w.size(0);
  const Tensor scale = tensor(f.weight_scales).reshape(shape) * f.input_scale;
  const Tensor sums = w.to(kFloat64).flatten(1).sum(1) * static_cast<double>(zero_point);
  const Tensor shift = (tensor(f.bias) - sums.to(kFloat32)).reshape(shape);
  acc.add_(shift).mul_(scale);
}

// --- int8_linear ---

std::vector<TensorSpec> int8_linear_meta(const std::vector<Tensor>& in, const Attrs& a) {
  const char* op = "int8_linear";
  const Tensor &x = in[0], &w = in[1];
  KILN_CHECK(x.dim() >= 1 && w.dim() == 2, op,
             ": expected an input of at least 1 dim and a 2-D weight, but got ", x.sym_sizes(),
             " and ", w.sym_sizes());
  check_operands(op, x, w, in[2], in[3], a);
  KILN_CHECK(x.sym_size(-1) == w.sym_size(1), op, ": input of shape ", x.sym_sizes(),
             " and weight of shape ", w.sym_sizes(), " do not match: ", x.sym_size(-1),
             " != in_features ", w.sym_size(1));
  SymShape out = x.sym_sizes();
  out.back() = w.sym_size(0);
  return meta::one_spec(out, kFloat32, x.device());
}

// oneDNN's product has the weight scales built in (its fast int8 matmuls need them when the
// primitive is made) and the input scale, which dynamic quantization changes with every call,
// applied after.
void int8_linear_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const Tensor x = in[0].contiguous(), w = in[1].contiguous();
  Tensor& y = out[0];
  if (y.numel() == 0) return;
  const int64_t k = w.size(1), n = w.size(0), m = y.numel() / n;
  const int64_t zp = a.i(1);
  const Folded f = fold("int8_linear", w, in[2], in[3], a.f(0));
  Tensor r = y.is_contiguous() ? y : empty(y.sym_sizes(), kFloat32);
  if (k > 0 && cpu::onednn::int8_linear(m, n, k, x.data_ptr<uint8_t>(), static_cast<int32_t>(zp),
                                        w.data_ptr<int8_t>(), f.weight_scales.data(), f.bias.data(),
                                        r.data_ptr<float>())) {
    r.mul_(f.input_scale);
  } else {
    Tensor acc = matmul(x.reshape({m, k}).to(kFloat32), w.to(kFloat32).t());
    scale_float_sums(acc, f, w, zp, 1);
    r.copy_(acc.reshape(r.sizes()));
  }
  if (!r.is_same(y)) y.copy_(r);
}

// --- int8_conv2d ---

conv::Params conv2d_params(const Attrs& a) {
  conv::Params p;
  const char* op = "int8_conv2d";
  p.stride = conv::expand(op, "stride", a.ints(2), 2);
  p.padding = conv::expand(op, "padding", a.ints(3), 2);
  p.dilation = conv::expand(op, "dilation", a.ints(4), 2);
  p.output_padding = {0, 0};
  p.groups = a.i(5);
  return p;
}

std::vector<TensorSpec> int8_conv2d_meta(const std::vector<Tensor>& in, const Attrs& a) {
  const char* op = "int8_conv2d";
  const Tensor &x = in[0], &w = in[1];
  KILN_CHECK(x.dim() == 4 && w.dim() == 4, op,
             ": expected a 4-D input [N, C, H, W] and a 4-D weight, but got ", x.sym_sizes(),
             " and ", w.sym_sizes());
  check_operands(op, x, w, in[2], in[3], a);
  const conv::Params p = conv2d_params(a);
  // The float convolution's checks and sizes, on stand-ins of its dtypes.
  const Tensor fx = empty_meta(x.sym_sizes(), kFloat32), fw = empty_meta(w.sym_sizes(), kFloat32);
  return meta::one_spec(conv::output_sizes(op, fx, fw, Tensor(), p), kFloat32, x.device());
}

// oneDNN's convolution takes the zero point itself (it pads with it) and the whole scale
// xs * ws[n] built in: a layer's calls share one primitive.
void int8_conv2d_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const conv::Params p = conv2d_params(a);
  const int64_t zp = a.i(1);
  const Tensor x = in[0].contiguous(), w = in[1].contiguous();
  Tensor& y = out[0];
  if (y.numel() == 0) return;
  const Folded f = fold("int8_conv2d", w, in[2], in[3], a.f(0));
  const cpu::ConvGeometry g = conv::geometry(x.sizes(), y.sizes(), w.sizes(), p);
  Tensor r = y.is_contiguous() ? y : empty(y.sym_sizes(), kFloat32);
  std::vector<float> scales(f.weight_scales.size());
  for (size_t o = 0; o < scales.size(); ++o)
    scales[o] = static_cast<float>(f.input_scale * f.weight_scales[o]);
  if (x.numel() == 0 || w.numel() == 0 ||
      !cpu::onednn::int8_conv(g, x.data_ptr<uint8_t>(), static_cast<int32_t>(zp),
                              w.data_ptr<int8_t>(), scales.data(), f.bias.data(),
                              r.data_ptr<float>())) {
    // Padded with the zero point: the real value 0.
    const Tensor padded =
        constant_pad_nd(x, {p.padding[1], p.padding[1], p.padding[0], p.padding[0]}, zp);
    Tensor acc =
        conv2d(padded.to(kFloat32), w.to(kFloat32), Tensor(), p.stride, 0, p.dilation, p.groups);
    scale_float_sums(acc, f, w, zp, 1);
    r.copy_(acc);
  }
  if (!r.is_same(y)) y.copy_(r);
}

// --- references (float64 from the dequantized operands) ---

Tensor dequantized_input(const Tensor& x, const Attrs& a) {
  return (x.to(kFloat64) - static_cast<double>(a.i(1))) * a.f(0);
}
Tensor dequantized_weight(const Tensor& w, const Tensor& w_scales) {
  std::vector<int64_t> shape(w.dim(), 1);
  shape[0] = w.size(0);
  return w.to(kFloat64) * w_scales.to(kFloat64).reshape(shape);
}

std::vector<Tensor> int8_linear_reference(const std::vector<Tensor>& in, const Attrs& a) {
  Tensor y = matmul(dequantized_input(in[0], a), dequantized_weight(in[1], in[2]).t());
  if (in[3].defined()) y = y + in[3].to(kFloat64);
  return {y};
}

std::vector<Tensor> int8_conv2d_reference(const std::vector<Tensor>& in, const Attrs& a) {
  const conv::Params p = conv2d_params(a);
  return {conv2d(dequantized_input(in[0], a), dequantized_weight(in[1], in[2]),
                 in[3].defined() ? in[3].to(kFloat64) : Tensor(), p.stride, p.padding, p.dilation,
                 p.groups)};
}

// --- samples (the dtype is the input's: uint8) ---

Tensor u8(std::vector<int64_t> shape, bool noncontiguous = false) {
  return samples::make(std::move(shape), kUInt8, 0, 256, noncontiguous);
}
Tensor s8(std::vector<int64_t> shape, bool noncontiguous = false) {
  return samples::make(std::move(shape), kInt8, -127, 128, noncontiguous);
}
Tensor scales(int64_t n) { return samples::make({n}, kFloat64, 0.001, 0.01); }
Tensor bias(int64_t n) { return samples::make({n}, kFloat32); }

std::vector<OpSample> int8_linear_samples(ScalarType) {
  const Attrs a{0.02, int64_t{128}};
  return {
      {{u8({5, 16}), s8({7, 16}), scales(7), bias(7)}, a, "per-channel scales, bias"},
      {{u8({2, 3, 40}), s8({4, 40}), scales(4), Tensor()},
       Attrs{0.1, int64_t{0}},
       "3-D input, no bias, zero point 0"},
      {{u8({6, 9}, true), s8({9, 5}).t(), scales(5), bias(5)},
       Attrs{0.05, int64_t{255}},
       "non-contiguous input and weight, zero point 255"},
      {{u8({1, 300}), s8({3, 300}), scales(3), bias(3)}, a, "long sums"},
      {{u8({0, 8}), s8({3, 8}), scales(3), bias(3)}, a, "zero rows"},
  };
}

std::vector<OpSample> int8_conv2d_samples(ScalarType) {
  auto attrs = [](double s, int64_t zp, std::vector<int64_t> stride, std::vector<int64_t> pad,
                  std::vector<int64_t> dil,
                  int64_t groups) { return Attrs{s, zp, stride, pad, dil, groups}; };
  return {
      {{u8({2, 3, 8, 8}), s8({4, 3, 3, 3}), scales(4), bias(4)},
       attrs(0.02, 128, {1}, {1}, {1}, 1),
       "3x3, padding 1 (padded with the zero point)"},
      {{u8({1, 4, 9, 7}), s8({6, 2, 3, 2}), scales(6), Tensor()},
       attrs(0.05, 10, {2, 1}, {0, 1}, {1, 2}, 2),
       "groups, stride, dilation"},
      {{u8({2, 3, 6, 6}, true), s8({5, 3, 1, 1}), scales(5), bias(5)},
       attrs(0.1, 0, {1}, {0}, {1}, 1),
       "1x1, non-contiguous input"},
  };
}

std::vector<OpErrorSample> int8_linear_error_samples() {
  const Attrs a{0.02, int64_t{128}};
  return {
      {{u8({2, 4}).to(kInt8), s8({3, 4}), scales(3), Tensor()},
       a,
       "expected a uint8 input and an int8 weight, but got int8 and int8",
       "input dtype"},
      {{u8({2, 4}), s8({3, 5}), scales(3), Tensor()}, a, "4 != in_features 5", "sizes"},
      {{u8({2, 4}), s8({3, 4}), scales(2), Tensor()},
       a,
       "expected floating point weight_scales of shape [3]",
       "scales"},
      {{u8({2, 4}), s8({3, 4}), scales(3), bias(3).to(kFloat64)},
       a,
       "expected a float32 bias of shape [3]",
       "bias"},
      {{u8({2, 4}), s8({3, 4}), scales(3), Tensor()},
       Attrs{0.02, int64_t{300}},
       "zero point 300 is outside [0, 255]",
       "zero point"},
  };
}

std::vector<OpErrorSample> int8_conv2d_error_samples() {
  const Attrs a{0.02,
                int64_t{128},
                std::vector<int64_t>{1},
                std::vector<int64_t>{0},
                std::vector<int64_t>{1},
                int64_t{1}};
  return {
      {{u8({3, 8, 8}), s8({4, 3, 3, 3}), scales(4), Tensor()},
       a,
       "expected a 4-D input [N, C, H, W] and a 4-D weight, but got [3, 8, 8]",
       "rank"},
      {{u8({1, 3, 8, 8}), s8({4, 3, 3, 3}).to(kUInt8), scales(4), Tensor()},
       a,
       "expected a uint8 input and an int8 weight, but got uint8 and uint8",
       "weight dtype"},
  };
}

}  // namespace

KILN_REGISTER_OP(int8_linear)
    .schema(
        "int8_linear(Tensor input, float input_scale, int input_zero_point, Tensor weight, "
        "Tensor weight_scales, Tensor? bias) -> Tensor")
    .meta(int8_linear_meta)
    .cpu(int8_linear_kernel)
    .samples(int8_linear_samples)
    .error_samples(int8_linear_error_samples)
    .reference(int8_linear_reference)
    .dtypes({kUInt8})
    .tolerance(1e-4, 1e-5)
    .lowering("extern:int8_linear");

KILN_REGISTER_OP(int8_conv2d)
    .schema(
        "int8_conv2d(Tensor input, float input_scale, int input_zero_point, Tensor weight, "
        "Tensor weight_scales, Tensor? bias, int[] stride, int[] padding, int[] dilation, "
        "int groups) -> Tensor")
    .meta(int8_conv2d_meta)
    .cpu(int8_conv2d_kernel)
    .samples(int8_conv2d_samples)
    .error_samples(int8_conv2d_error_samples)
    .reference(int8_conv2d_reference)
    .dtypes({kUInt8})
    .tolerance(1e-4, 1e-5)
    .lowering("extern:int8_conv2d");

Tensor int8_linear(const Tensor& input, double input_scale, int64_t input_zero_point,
                   const Tensor& weight, const Tensor& weight_scales, const Tensor& bias) {
  static const OpDef& op = get_op("int8_linear");
  return call_op1(op, {input, weight, weight_scales, bias}, {input_scale, input_zero_point});
}

Tensor int8_conv2d(const Tensor& input, double input_scale, int64_t input_zero_point,
                   const Tensor& weight, const Tensor& weight_scales, const Tensor& bias,
                   IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  static const OpDef& op = get_op("int8_conv2d");
  return call_op1(
      op, {input, weight, weight_scales, bias},
      {input_scale, input_zero_point, stride.vec(), padding.vec(), dilation.vec(), groups});
}

}  // namespace kiln
