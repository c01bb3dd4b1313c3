// quantize_per_tensor_affine, quantize_per_channel_affine and their dequantize ops: PyTorch 2's
// decomposed quantize ops (torch.ops.quantized_decomposed), on plain integer tensors.
//   q = clamp(nearbyint(x * (1 / scale)) + zero_point, quant_min, quant_max)
//   x = (q - zero_point) * scale                                     (float32)
#include <algorithm>
#include <cmath>

#include "kiln/backend/cpu/parallel.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/quantized.h"
#include "kiln/ops/quantized/util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

using quantized::Channels;

template <class In, class Out>
void quantize_loop(const In* x, Out* q, int64_t n, const Channels& ch, const double* scales,
                   const int64_t* zero_points, int64_t qmin, int64_t qmax) {
  using Compute = std::conditional_t<std::is_same_v<In, double>, double, float>;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = ch.of(i);
    const Compute inv = Compute(1) / static_cast<Compute>(scales[c]);
    const Compute v = std::nearbyint(static_cast<Compute>(x[i]) * inv);
    const int64_t zp = zero_points[c];
    int64_t r;
    if (std::isnan(v))
      r = zp;
    else  // clamp before converting: out of range floats do not convert
      r = static_cast<int64_t>(std::fmin(std::fmax(v, Compute(qmin - zp)), Compute(qmax - zp))) +
          zp;
    q[i] = static_cast<Out>(std::min(std::max(r, qmin), qmax));
  }
}

// The per-tensor float32 case, which every int8 layer's input takes: branch-free over restrict
// pointers and values held in registers, so that it vectorises (nearbyint is VROUNDPS), and split
// over the threads.
template <class Out>
void quantize_float_run(const float* __restrict x, Out* __restrict q, int64_t n, float inv,
                        float lo, float hi, int32_t zp) {
  for (int64_t i = 0; i < n; ++i) {
    float v = std::nearbyint(x[i] * inv);
    v = x[i] == x[i] ? v : 0.0f;  // NaN: the zero point
    v = std::min(std::max(v, lo), hi);
    q[i] = static_cast<Out>(static_cast<int32_t>(v) + zp);
  }
}

template <class Out>
void quantize_float_per_tensor(const float* x, Out* q, int64_t n, double scale, int64_t zero_point,
                               int64_t qmin, int64_t qmax) {
  const float inv = 1.0f / static_cast<float>(scale);
  const float lo = static_cast<float>(qmin - zero_point),
              hi = static_cast<float>(qmax - zero_point);
  const auto zp = static_cast<int32_t>(zero_point);
  cpu::parallel_for(0, n, int64_t{1} << 15, [=](int64_t begin, int64_t end) {
    quantize_float_run(x + begin, q + begin, end - begin, inv, lo, hi, zp);
  });
}

template <class In>
void dequantize_loop(const In* q, float* x, int64_t n, const Channels& ch, const double* scales,
                     const int64_t* zero_points) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = ch.of(i);
    x[i] = (static_cast<float>(q[i]) - static_cast<float>(zero_points[c])) *
           static_cast<float>(scales[c]);
  }
}

void quantize_kernel(const Tensor& self, Tensor& out, const Channels& ch, const double* scales,
                     const int64_t* zero_points, int64_t qmin, int64_t qmax) {
  const Tensor x = self.contiguous();
  visit_dtype(x.dtype(), [&](auto in) {
    using In = decltype(in);
    if constexpr (std::is_floating_point_v<In> || std::is_same_v<In, Half> ||
                  std::is_same_v<In, BFloat16>) {
      visit_dtype(out.dtype(), [&](auto o) {
        using Out = decltype(o);
        if constexpr (std::is_same_v<In, float> &&
                      (std::is_same_v<Out, int8_t> || std::is_same_v<Out, uint8_t>)) {
          if (ch.count == 1)
            return quantize_float_per_tensor(static_cast<const float*>(x.data_ptr()),
                                             static_cast<Out*>(out.data_ptr()), x.numel(),
                                             scales[0], zero_points[0], qmin, qmax);
        }
        if constexpr (std::is_same_v<Out, int8_t> || std::is_same_v<Out, uint8_t> ||
                      std::is_same_v<Out, int32_t>)
          quantize_loop(static_cast<const In*>(x.data_ptr()), static_cast<Out*>(out.data_ptr()),
                        x.numel(), ch, scales, zero_points, qmin, qmax);
      });
    }
  });
}

void dequantize_kernel(const Tensor& self, Tensor& out, const Channels& ch, const double* scales,
                       const int64_t* zero_points) {
  const Tensor q = self.contiguous();
  visit_dtype(q.dtype(), [&](auto in) {
    using In = decltype(in);
    if constexpr (std::is_same_v<In, int8_t> || std::is_same_v<In, uint8_t> ||
                  std::is_same_v<In, int32_t>)
      dequantize_loop(static_cast<const In*>(q.data_ptr()), out.data_ptr<float>(), q.numel(), ch,
                      scales, zero_points);
  });
}

// --- per tensor ---

std::vector<TensorSpec> quantize_per_tensor_meta(const std::vector<Tensor>& in, const Attrs& a) {
  const char* op = "quantize_per_tensor_affine";
  quantized::check_float_input(op, in[0]);
  quantized::check_range(op, a.dtype(4), a.i(2), a.i(3));
  quantized::check_scale_and_zero_point(op, a.f(0), a.i(1), a.i(2), a.i(3));
  return meta::one_spec(in[0].sym_sizes(), a.dtype(4), in[0].device());
}

void quantize_per_tensor_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out,
                                const Attrs& a) {
  const double scale = a.f(0);
  const int64_t zero_point = a.i(1);
  quantize_kernel(in[0], out[0], Channels{}, &scale, &zero_point, a.i(2), a.i(3));
}

std::vector<TensorSpec> dequantize_per_tensor_meta(const std::vector<Tensor>& in, const Attrs& a) {
  const char* op = "dequantize_per_tensor_affine";
  quantized::check_int_input(op, in[0]);
  const ScalarType t = in[0].dtype();
  quantized::check_scale_and_zero_point(op, a.f(0), a.i(1), integer_min(t), integer_max(t));
  return meta::one_spec(in[0].sym_sizes(), kFloat32, in[0].device());
}

void dequantize_per_tensor_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out,
                                  const Attrs& a) {
  const double scale = a.f(0);
  const int64_t zero_point = a.i(1);
  dequantize_kernel(in[0], out[0], Channels{}, &scale, &zero_point);
}

// --- per channel ---

std::vector<TensorSpec> quantize_per_channel_meta(const std::vector<Tensor>& in, const Attrs& a) {
  const char* op = "quantize_per_channel_affine";
  quantized::check_float_input(op, in[0]);
  quantized::check_channel_params(op, in[0], in[1], in[2], a.i(0));
  quantized::check_range(op, a.dtype(3), a.i(1), a.i(2));
  return meta::one_spec(in[0].sym_sizes(), a.dtype(3), in[0].device());
}

// The checked per-channel parameters of a call: inputs (self, scales, zero_points), attribute 0
// the axis; each zero point within [qmin, qmax].
struct ChannelParams {
  Channels channels;
  std::vector<double> scales;
  std::vector<int64_t> zero_points;
};
ChannelParams channel_params(const char* op, const std::vector<Tensor>& in, const Attrs& a,
                             int64_t qmin, int64_t qmax) {
  const int64_t axis = quantized::check_channel_params(op, in[0], in[1], in[2], a.i(0));
  ChannelParams p{quantized::channels_along(in[0], axis), quantized::to_doubles(in[1]),
                  quantized::to_int64s(in[2])};
  for (size_t c = 0; c < p.scales.size(); ++c)
    quantized::check_scale_and_zero_point(op, p.scales[c], p.zero_points[c], qmin, qmax);
  return p;
}

void quantize_per_channel_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out,
                                 const Attrs& a) {
  const ChannelParams p = channel_params("quantize_per_channel_affine", in, a, a.i(1), a.i(2));
  quantize_kernel(in[0], out[0], p.channels, p.scales.data(), p.zero_points.data(), a.i(1), a.i(2));
}

std::vector<TensorSpec> dequantize_per_channel_meta(const std::vector<Tensor>& in, const Attrs& a) {
  const char* op = "dequantize_per_channel_affine";
  quantized::check_int_input(op, in[0]);
  quantized::check_channel_params(op, in[0], in[1], in[2], a.i(0));
  return meta::one_spec(in[0].sym_sizes(), kFloat32, in[0].device());
}

void dequantize_per_channel_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out,
                                   const Attrs& a) {
  const ScalarType t = in[0].dtype();
  const ChannelParams p =
      channel_params("dequantize_per_channel_affine", in, a, integer_min(t), integer_max(t));
  dequantize_kernel(in[0], out[0], p.channels, p.scales.data(), p.zero_points.data());
}

// --- references (float64; round half to even, as nearbyint in the default rounding mode) ---

// Parameters shaped to broadcast against self along `axis` (per tensor: 0-dim).
Tensor along(const Tensor& v, int64_t dim, int64_t axis) {
  std::vector<int64_t> shape(dim, 1);
  shape[axis] = v.size(0);
  return v.to(kFloat64).reshape(shape);
}

Tensor quantize_reference(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                          int64_t qmin, int64_t qmax, ScalarType dtype) {
  const Tensor q = (x.to(kFloat64) / scale).round() + zero_point;
  return q.clamp(static_cast<double>(qmin), static_cast<double>(qmax)).to(dtype);
}

Tensor dequantize_reference(const Tensor& q, const Tensor& scale, const Tensor& zero_point) {
  return (q.to(kFloat64) - zero_point) * scale;
}

Tensor scalar64(double v) { return full({}, v, kFloat64); }

int64_t wrap(int64_t axis, int64_t dim) { return axis < 0 ? axis + dim : axis; }

// --- samples ---

std::vector<OpSample> quantize_per_tensor_samples(ScalarType dt) {
  using samples::make;
  auto attrs = [](double s, int64_t zp, int64_t lo, int64_t hi, ScalarType t) {
    return Attrs{s, zp, lo, hi, t};
  };
  return {
      {{make({4, 5}, dt)}, attrs(0.02, 3, -128, 127, kInt8), "qint8, values past the range"},
      {{make({3, 7}, dt, -3, 3, true)}, attrs(0.03, 128, 0, 255, kUInt8), "quint8, non-contiguous"},
      {{make({6}, dt)}, attrs(0.05, 64, 0, 127, kUInt8), "reduced range [0, 127]"},
      {{make({}, dt)},
       attrs(0.001, 0, -(int64_t{1} << 31), (int64_t{1} << 31) - 1, kInt32),
       "0-dim, int32"},
      {{make({0, 3}, dt)}, attrs(0.1, 0, -128, 127, kInt8), "zero-size"},
  };
}

std::vector<OpSample> dequantize_per_tensor_samples(ScalarType) {
  using samples::make;
  return {
      {{make({4, 5}, kInt8, -128, 128)}, Attrs{0.02, int64_t{3}}, "int8"},
      {{make({3, 7}, kUInt8, 0, 256, true)}, Attrs{0.5, int64_t{128}}, "uint8, non-contiguous"},
      {{make({5}, kInt32, -100000, 100000)}, Attrs{1e-4, int64_t{-7}}, "int32"},
      {{make({}, kInt8, -128, 128)}, Attrs{0.1, int64_t{0}}, "0-dim"},
      {{make({0, 2}, kUInt8, 0, 256)}, Attrs{0.1, int64_t{0}}, "zero-size"},
  };
}

std::vector<OpSample> quantize_per_channel_samples(ScalarType dt) {
  using samples::make;
  const Tensor scales3 = tensor({0.01, 0.02, 0.05}, kFloat64);
  const Tensor zps3 = tensor(std::vector<int64_t>{0, -3, 5});
  return {
      {{make({3, 4}, dt), scales3, zps3},
       Attrs{int64_t{0}, int64_t{-128}, int64_t{127}, kInt8},
       "rows, qint8"},
      {{make({2, 3, 4}, dt, -3, 3, true), scales3.to(kFloat32),
        tensor(std::vector<int64_t>{0, 0, 0})},
       Attrs{int64_t{1}, int64_t{-127}, int64_t{127}, kInt8},
       "middle axis, symmetric range, non-contiguous"},
      {{make({4, 3}, dt), scales3, tensor(std::vector<int64_t>{128, 100, 0})},
       Attrs{int64_t{-1}, int64_t{0}, int64_t{255}, kUInt8},
       "last axis (-1), quint8"},
  };
}

std::vector<OpSample> dequantize_per_channel_samples(ScalarType) {
  using samples::make;
  const Tensor scales3 = tensor({0.01, 0.02, 0.05}, kFloat64);
  return {
      {{make({3, 4}, kInt8, -128, 128), scales3, tensor(std::vector<int64_t>{0, -3, 5})},
       Attrs{int64_t{0}},
       "rows, int8"},
      {{make({2, 3, 4}, kUInt8, 0, 256, true), scales3, tensor(std::vector<int64_t>{0, 128, 255})},
       Attrs{int64_t{1}},
       "middle axis, uint8, non-contiguous"},
  };
}

std::vector<OpErrorSample> quantize_error_samples() {
  using samples::make;
  const Tensor x = make({2, 3}, kFloat32);
  return {
      {{make({2, 3}, kInt32)},
       Attrs{0.1, int64_t{0}, int64_t{-128}, int64_t{127}, kInt8},
       "expected a floating point input, but got int32",
       "integer input"},
      {{x},
       Attrs{0.0, int64_t{0}, int64_t{-128}, int64_t{127}, kInt8},
       "expected a positive finite scale, but got 0",
       "zero scale"},
      {{x},
       Attrs{0.1, int64_t{200}, int64_t{-128}, int64_t{127}, kInt8},
       "zero point 200 is outside [-128, 127]",
       "zero point"},
      {{x},
       Attrs{0.1, int64_t{0}, int64_t{-128}, int64_t{255}, kInt8},
       "but got [-128, 255]",
       "range"},
      {{x},
       Attrs{0.1, int64_t{0}, int64_t{0}, int64_t{1}, kFloat32},
       "expected dtype int8, uint8 or int32, but got float32",
       "dtype"},
  };
}

std::vector<OpErrorSample> quantize_per_channel_error_samples() {
  using samples::make;
  const Tensor x = make({2, 3}, kFloat32);
  const Attrs a{int64_t{1}, int64_t{-128}, int64_t{127}, kInt8};
  return {
      {{x, tensor({0.1, 0.1}, kFloat64), tensor(std::vector<int64_t>{0, 0})},
       a,
       "expected scales and zero_points of shape [3]",
       "sizes"},
      {{x, tensor({0.1, 0.1, 0.1}, kFloat64), tensor(std::vector<int64_t>{0, 0, 0})},
       Attrs{int64_t{2}, int64_t{-128}, int64_t{127}, kInt8},
       "axis 2 is out of range",
       "axis"},
  };
}

std::vector<OpErrorSample> dequantize_error_samples() {
  using samples::make;
  return {
      {{make({2}, kFloat32)},
       Attrs{0.1, int64_t{0}},
       "expected an int8, uint8 or int32 input, but got float32",
       "float input"},
      {{make({2}, kUInt8, 0, 256)},
       Attrs{0.1, int64_t{-1}},
       "zero point -1 is outside [0, 255]",
       "zero point"},
  };
}

}  // namespace

KILN_REGISTER_OP(quantize_per_tensor_affine)
    .schema(
        "quantize_per_tensor_affine(Tensor self, float scale, int zero_point, int quant_min, "
        "int quant_max, ScalarType dtype) -> Tensor")
    .meta(quantize_per_tensor_meta)
    .cpu(quantize_per_tensor_kernel)
    .samples(quantize_per_tensor_samples)
    .error_samples(quantize_error_samples)
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      return std::vector<Tensor>{quantize_reference(in[0], scalar64(a.f(0)),
                                                    scalar64(static_cast<double>(a.i(1))), a.i(2),
                                                    a.i(3), a.dtype(4))};
    })
    .tolerance(1, 0)  // float32 x * (1 / scale) and float64 x / scale may round apart at a tie
    .lowering("extern:quantize_per_tensor_affine");

KILN_REGISTER_OP(dequantize_per_tensor_affine)
    .schema("dequantize_per_tensor_affine(Tensor self, float scale, int zero_point) -> Tensor")
    .meta(dequantize_per_tensor_meta)
    .cpu(dequantize_per_tensor_kernel)
    .samples(dequantize_per_tensor_samples)
    .error_samples(dequantize_error_samples)
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      return std::vector<Tensor>{
          dequantize_reference(in[0], scalar64(a.f(0)), scalar64(static_cast<double>(a.i(1))))};
    })
    .dtypes({kInt8})
    .lowering("extern:dequantize_per_tensor_affine");

KILN_REGISTER_OP(quantize_per_channel_affine)
    .schema(
        "quantize_per_channel_affine(Tensor self, Tensor scales, Tensor zero_points, int axis, "
        "int quant_min, int quant_max, ScalarType dtype) -> Tensor")
    .meta(quantize_per_channel_meta)
    .cpu(quantize_per_channel_kernel)
    .samples(quantize_per_channel_samples)
    .error_samples(quantize_per_channel_error_samples)
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const int64_t axis = wrap(a.i(0), in[0].dim());
      return std::vector<Tensor>{quantize_reference(in[0], along(in[1], in[0].dim(), axis),
                                                    along(in[2], in[0].dim(), axis), a.i(1), a.i(2),
                                                    a.dtype(3))};
    })
    .tolerance(1, 0)
    .lowering("extern:quantize_per_channel_affine");

KILN_REGISTER_OP(dequantize_per_channel_affine)
    .schema(
        "dequantize_per_channel_affine(Tensor self, Tensor scales, Tensor zero_points, int axis) "
        "-> Tensor")
    .meta(dequantize_per_channel_meta)
    .cpu(dequantize_per_channel_kernel)
    .samples(dequantize_per_channel_samples)
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const int64_t axis = wrap(a.i(0), in[0].dim());
      return std::vector<Tensor>{dequantize_reference(in[0], along(in[1], in[0].dim(), axis),
                                                      along(in[2], in[0].dim(), axis))};
    })
    .dtypes({kInt8})
    .lowering("extern:dequantize_per_channel_affine");

Tensor quantize_per_tensor_affine(const Tensor& self, double scale, int64_t zero_point,
                                  int64_t quant_min, int64_t quant_max, ScalarType dtype) {
  static const OpDef& op = get_op("quantize_per_tensor_affine");
  return call_op1(op, {self}, {scale, zero_point, quant_min, quant_max, dtype});
}

Tensor dequantize_per_tensor_affine(const Tensor& self, double scale, int64_t zero_point) {
  static const OpDef& op = get_op("dequantize_per_tensor_affine");
  return call_op1(op, {self}, {scale, zero_point});
}

Tensor quantize_per_channel_affine(const Tensor& self, const Tensor& scales,
                                   const Tensor& zero_points, int64_t axis, int64_t quant_min,
                                   int64_t quant_max, ScalarType dtype) {
  static const OpDef& op = get_op("quantize_per_channel_affine");
  return call_op1(op, {self, scales, zero_points}, {axis, quant_min, quant_max, dtype});
}

Tensor dequantize_per_channel_affine(const Tensor& self, const Tensor& scales,
                                     const Tensor& zero_points, int64_t axis) {
  static const OpDef& op = get_op("dequantize_per_channel_affine");
  return call_op1(op, {self, scales, zero_points}, {axis});
}

}  // namespace kiln
