#pragma once
// The int8 layers convert and quantize_dynamic put in place of float ones (torch.ao.nn.quantized
// and .dynamic). Weights are int8, symmetric, per output channel (or per tensor), quantized
// tensors (qint8) kept as buffers; outputs are float32.
#include <functional>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "kiln/nn/module.h"
#include "kiln/nn/modules/conv.h"
#include "kiln/nn/modules/linear.h"
#include "kiln/nn/modules/rnn.h"
#include "kiln/quantization/observer.h"

namespace kiln::quantization {

using ObserverFactory = std::function<std::unique_ptr<Observer>()>;

// Static quantization: the input is quantized with the scale and zero point calibration chose
// (quint8), then runs through int8_linear.
class QuantizedLinearImpl : public nn::Module {
 public:
  // `weight_observer` sees the float weight and chooses its parameters.
  QuantizedLinearImpl(const nn::LinearImpl& linear, const QParams& input,
                      Observer& weight_observer);
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;

  Tensor weight;  // qint8 [out_features, in_features]
  Tensor bias;    // float32 [out_features] or undefined
  double input_scale;
  int64_t input_zero_point;
};

class QuantizedConv2dImpl : public nn::Module {
 public:
  QuantizedConv2dImpl(const nn::Conv2dImpl& conv, const QParams& input, Observer& weight_observer);
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;

  Tensor weight;  // qint8 [out, in / groups, kh, kw]
  Tensor bias;
  double input_scale;
  int64_t input_zero_point;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
};

// Dynamic quantization: each call quantizes its input with that input's own range (quint8,
// affine), then runs int8_linear. The weights are quantized once.
class DynamicQuantizedLinearImpl : public nn::Module {
 public:
  DynamicQuantizedLinearImpl(const nn::LinearImpl& linear, Observer& weight_observer,
                             bool reduce_range = true);
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;

  Tensor weight;
  Tensor bias;
  bool reduce_range;
};

// Dynamic quantization of nn::LSTM (torch.ao.nn.quantized.dynamic.LSTM): each layer's input
// and hidden products run as dynamically quantized int8 products; gates and states stay float32.
// Every layer and direction of the float LSTM is kept; proj_size is not supported.
class DynamicQuantizedLSTMImpl : public nn::Module {
 public:
  using State = std::tuple<Tensor, Tensor>;
  DynamicQuantizedLSTMImpl(const nn::LSTMImpl& lstm, const ObserverFactory& weight_observer,
                           bool reduce_range = true);
  // -> (output, (h_n, c_n)), as nn::LSTM's forward.
  std::tuple<Tensor, State> forward(const Tensor& input, std::optional<State> hx = {}) const;
  void pretty_print(std::ostream& stream) const override;

  nn::LSTMOptions options;
  bool reduce_range;

 private:
  struct Cell {
    Tensor w_ih, w_hh, b_ih, b_hh;  // qint8 weights, float32 biases (or undefined)
  };
  std::vector<Cell> cells_;  // layer * directions + direction
  // One direction of one layer over the whole sequence [T, N, in] -> [T, N, H].
  Tensor run_direction(const Cell& cell, const Tensor& input, Tensor& h, Tensor& c,
                       bool reverse) const;
};

// y = x W^T + b with x quantized per call over its own range (quint8, affine).
Tensor dynamic_int8_linear(const Tensor& input, const Tensor& qweight, const Tensor& bias,
                           bool reduce_range);

// The int8 operands of a float weight, as the weight observer quantizes it.
Tensor quantize_weight(const Tensor& weight, Observer& observer);
// (values int8, scales float64 [out]) of a qint8 weight, per channel or per tensor.
std::pair<Tensor, Tensor> weight_operands(const Tensor& qweight);

}  // namespace kiln::quantization
