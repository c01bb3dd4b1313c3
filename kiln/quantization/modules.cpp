#include "kiln/quantization/modules.h"

#include "kiln/core/grad_mode.h"
#include "kiln/kiln.h"
#include "kiln/ops/quantized.h"

namespace kiln::quantization {
namespace {

double scalar_of(const Tensor& t) { return t.to(kFloat64).item<double>(); }
int64_t int_of(const Tensor& t) { return t.to(kInt64).item<int64_t>(); }

Tensor detached_bias(const Tensor& b) {
  return b.defined() ? b.detach().to(kFloat32).contiguous() : Tensor();
}

// quint8 values of x for the given parameters.
Tensor quantize_input(const Tensor& x, double scale, int64_t zero_point) {
  return quantize_per_tensor_affine(x, scale, zero_point, 0, 255, kUInt8);
}

}  // namespace

Tensor quantize_weight(const Tensor& weight, Observer& observer) {
  NoGradGuard no_grad;
  KILN_CHECK(observer.dtype() == kQInt8 && is_symmetric(observer.qscheme()),
             "quantization: int8 layers take symmetric qint8 weights (oneDNN's), but the weight "
             "observer has ",
             observer.dtype(), ", ", qscheme_name(observer.qscheme()));
  const Tensor w = weight.detach();
  observer(w);
  const QParams p = observer.calculate_qparams();
  if (is_per_channel(observer.qscheme()))
    return quantize_per_channel(w, p.scale, p.zero_point, observer.options().ch_axis(), kQInt8);
  return quantize_per_tensor(w, scalar_of(p.scale), int_of(p.zero_point), kQInt8);
}

std::pair<Tensor, Tensor> weight_operands(const Tensor& qweight) {
  const Tensor values = quantized_values(qweight);
  if (qweight.qscheme() == kPerChannelAffine) return {values, qweight.q_per_channel_scales()};
  return {values, full({qweight.size(0)}, qweight.q_scale(), kFloat64)};
}

Tensor dynamic_int8_linear(const Tensor& input, const Tensor& qweight, const Tensor& bias,
                           bool reduce_range) {
  MinMaxObserver observer(ObserverOptions().dtype(kQUInt8).reduce_range(reduce_range));
  observer(input);
  const QParams p = observer.calculate_qparams();
  const double scale = scalar_of(p.scale);
  const int64_t zero_point = int_of(p.zero_point);
  const auto [w, scales] = weight_operands(qweight);
  return int8_linear(quantize_input(input, scale, zero_point), scale, zero_point, w, scales, bias);
}

QuantizedLinearImpl::QuantizedLinearImpl(const nn::LinearImpl& linear, const QParams& input,
                                         Observer& weight_observer)
    : weight(register_buffer("weight", quantize_weight(linear.weight, weight_observer))),
      bias(register_buffer("bias", detached_bias(linear.bias))),
      input_scale(scalar_of(input.scale)),
      input_zero_point(int_of(input.zero_point)) {}

Tensor QuantizedLinearImpl::forward(const Tensor& input) const {
  const auto [w, scales] = weight_operands(weight);
  return int8_linear(quantize_input(input, input_scale, input_zero_point), input_scale,
                     input_zero_point, w, scales, bias);
}

void QuantizedLinearImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::quantization::QuantizedLinear(in_features=" << weight.size(1)
         << ", out_features=" << weight.size(0) << ", input_scale=" << input_scale
         << ", input_zero_point=" << input_zero_point
         << ", qscheme=" << qscheme_name(weight.qscheme()) << ")";
}

QuantizedConv2dImpl::QuantizedConv2dImpl(const nn::Conv2dImpl& conv, const QParams& input,
                                         Observer& weight_observer)
    : weight(register_buffer("weight", quantize_weight(conv.weight, weight_observer))),
      bias(register_buffer("bias", detached_bias(conv.bias))),
      input_scale(scalar_of(input.scale)),
      input_zero_point(int_of(input.zero_point)),
      stride(conv.options.stride().vec()),
      dilation(conv.options.dilation().vec()),
      groups(conv.options.groups()) {
  const auto* pad = std::get_if<ExpandingArray<2>>(&conv.options.padding());
  KILN_CHECK(pad != nullptr && conv.options.padding_mode() == "zeros",
             "quantization: int8 Conv2d takes explicit zero padding, but the layer has padding "
             "mode '",
             conv.options.padding_mode(), "'", pad ? "" : " with 'same' or 'valid'");
  padding = pad->vec();
}

Tensor QuantizedConv2dImpl::forward(const Tensor& input) const {
  const auto [w, scales] = weight_operands(weight);
  return int8_conv2d(quantize_input(input, input_scale, input_zero_point), input_scale,
                     input_zero_point, w, scales, bias, stride, padding, dilation, groups);
}

void QuantizedConv2dImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::quantization::QuantizedConv2d(" << weight.size(1) * groups << ", "
         << weight.size(0) << ", kernel_size=[" << weight.size(2) << ", " << weight.size(3)
         << "], input_scale=" << input_scale << ", input_zero_point=" << input_zero_point << ")";
}

DynamicQuantizedLinearImpl::DynamicQuantizedLinearImpl(const nn::LinearImpl& linear,
                                                       Observer& weight_observer, bool reduce_range)
    : weight(register_buffer("weight", quantize_weight(linear.weight, weight_observer))),
      bias(register_buffer("bias", detached_bias(linear.bias))),
      reduce_range(reduce_range) {}

Tensor DynamicQuantizedLinearImpl::forward(const Tensor& input) const {
  return dynamic_int8_linear(input, weight, bias, reduce_range);
}

void DynamicQuantizedLinearImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::quantization::DynamicQuantizedLinear(in_features=" << weight.size(1)
         << ", out_features=" << weight.size(0) << ", qscheme=" << qscheme_name(weight.qscheme())
         << ")";
}

DynamicQuantizedLSTMImpl::DynamicQuantizedLSTMImpl(const nn::LSTMImpl& lstm,
                                                   const ObserverFactory& weight_observer,
                                                   bool reduce_range)
    : options(lstm.options), reduce_range(reduce_range) {
  KILN_CHECK(options.proj_size() == 0,
             "quantize_dynamic: LSTM with proj_size is not supported (got proj_size=",
             options.proj_size(), ")");
  const auto params = lstm.named_parameters();
  auto weight = [&](const std::string& name) {
    std::unique_ptr<Observer> observer = weight_observer();
    return register_buffer(name, quantize_weight(params[name], *observer));
  };
  auto bias = [&](const std::string& name) {
    return options.bias() ? register_buffer(name, detached_bias(params[name])) : Tensor();
  };
  const int64_t directions = options.bidirectional() ? 2 : 1;
  for (int64_t layer = 0; layer < options.num_layers(); ++layer) {
    for (int64_t d = 0; d < directions; ++d) {
      const std::string suffix = "_l" + std::to_string(layer) + (d ? "_reverse" : "");
      cells_.push_back({weight("weight_ih" + suffix), weight("weight_hh" + suffix),
                        bias("bias_ih" + suffix), bias("bias_hh" + suffix)});
    }
  }
}

Tensor DynamicQuantizedLSTMImpl::run_direction(const Cell& cell, const Tensor& input, Tensor& h,
                                               Tensor& c, bool reverse) const {
  const int64_t steps = input.size(0), batch = input.size(1);
  // The input's products for every step at once: one int8 product of T * N rows.
  const Tensor x_gates = dynamic_int8_linear(input.reshape({steps * batch, input.size(2)}),
                                             cell.w_ih, cell.b_ih, reduce_range)
                             .reshape({steps, batch, -1});
  std::vector<Tensor> outputs(steps);
  for (int64_t i = 0; i < steps; ++i) {
    const int64_t t = reverse ? steps - 1 - i : i;
    const Tensor gates = x_gates[t] + dynamic_int8_linear(h, cell.w_hh, cell.b_hh, reduce_range);
    const std::vector<Tensor> g = gates.chunk(4, 1);  // input, forget, cell, output
    c = g[1].sigmoid() * c + g[0].sigmoid() * g[2].tanh();
    h = g[3].sigmoid() * c.tanh();
    outputs[t] = h;
  }
  return stack(outputs);
}

std::tuple<Tensor, DynamicQuantizedLSTMImpl::State> DynamicQuantizedLSTMImpl::forward(
    const Tensor& input, std::optional<State> hx) const {
  NoGradGuard no_grad;
  KILN_CHECK(input.dim() == 2 || input.dim() == 3,
             "DynamicQuantizedLSTM: expected a 2-D (unbatched) or 3-D input, but got ",
             input.sizes());
  const bool batched = input.dim() == 3;
  Tensor x = batched ? (options.batch_first() ? input.transpose(0, 1) : input) : input.unsqueeze(1);
  KILN_CHECK(x.size(2) == options.input_size(), "DynamicQuantizedLSTM: expected input_size ",
             options.input_size(), ", but got an input of shape ", input.sizes());
  x = x.to(kFloat32);
  const int64_t directions = options.bidirectional() ? 2 : 1, layers = options.num_layers();
  const int64_t batch = x.size(1), hidden = options.hidden_size();
  Tensor h0, c0;
  if (hx) {
    h0 = std::get<0>(*hx).to(kFloat32);
    c0 = std::get<1>(*hx).to(kFloat32);
    if (!batched) {
      h0 = h0.unsqueeze(1);
      c0 = c0.unsqueeze(1);
    }
    const std::vector<int64_t> want{layers * directions, batch, hidden};
    KILN_CHECK(h0.sizes().vec() == want && c0.sizes().vec() == want,
               "DynamicQuantizedLSTM: expected h_0 and c_0 of shape ", IntArrayRef(want),
               ", but got ", h0.sizes(), " and ", c0.sizes());
  } else {
    h0 = zeros({layers * directions, batch, hidden});
    c0 = zeros({layers * directions, batch, hidden});
  }
  std::vector<Tensor> h_n, c_n;
  for (int64_t layer = 0; layer < layers; ++layer) {
    std::vector<Tensor> outs;
    for (int64_t d = 0; d < directions; ++d) {
      const int64_t k = layer * directions + d;
      Tensor h = h0[k], c = c0[k];
      outs.push_back(run_direction(cells_[k], x, h, c, d == 1));
      h_n.push_back(h);
      c_n.push_back(c);
    }
    x = directions == 1 ? outs[0] : cat(outs, 2);
  }
  Tensor out = batched ? (options.batch_first() ? x.transpose(0, 1) : x) : x.squeeze(1);
  Tensor hn = stack(h_n), cn = stack(c_n);
  if (!batched) {
    hn = hn.squeeze(1);
    cn = cn.squeeze(1);
  }
  return {out, {hn, cn}};
}

void DynamicQuantizedLSTMImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::quantization::DynamicQuantizedLSTM(" << options.input_size() << ", "
         << options.hidden_size() << ", num_layers=" << options.num_layers()
         << ", bidirectional=" << std::boolalpha << options.bidirectional() << ")";
}

}  // namespace kiln::quantization
