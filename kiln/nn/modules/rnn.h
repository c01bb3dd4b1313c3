#pragma once
// Recurrent modules: RNN (tanh or relu), LSTM (with proj_size) and GRU over whole sequences
// (num_layers, bidirectional, batch_first, dropout between layers), and the single-step
// RNNCell, LSTMCell and GRUCell. Parameter names, shapes, gate order and initialisation are
// PyTorch's (weight_ih_l0, weight_hh_l0_reverse, ..., all U(-1/sqrt(hidden), 1/sqrt(hidden))).
// Each layer and direction of the sequence modules runs as one op (kiln/ops/rnn.h).
#include <cstdint>
#include <optional>
#include <ostream>
#include <tuple>
#include <vector>

#include "kiln/core/arg.h"
#include "kiln/nn/init.h"
#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"
#include "kiln/nn/packed_sequence.h"

namespace kiln::nn {

struct RNNOptions {
  RNNOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  KILN_ARG(int64_t, input_size);
  KILN_ARG(int64_t, hidden_size);
  KILN_ARG(int64_t, num_layers) = 1;
  KILN_ARG(Nonlinearity, nonlinearity) = kTanh;  // kTanh or kReLU
  KILN_ARG(bool, bias) = true;
  KILN_ARG(bool, batch_first) = false;
  KILN_ARG(double, dropout) = 0.0;
  KILN_ARG(bool, bidirectional) = false;
};

struct LSTMOptions {
  LSTMOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  KILN_ARG(int64_t, input_size);
  KILN_ARG(int64_t, hidden_size);
  KILN_ARG(int64_t, num_layers) = 1;
  KILN_ARG(bool, bias) = true;
  KILN_ARG(bool, batch_first) = false;
  KILN_ARG(double, dropout) = 0.0;
  KILN_ARG(bool, bidirectional) = false;
  KILN_ARG(int64_t, proj_size) = 0;
};

struct GRUOptions {
  GRUOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  KILN_ARG(int64_t, input_size);
  KILN_ARG(int64_t, hidden_size);
  KILN_ARG(int64_t, num_layers) = 1;
  KILN_ARG(bool, bias) = true;
  KILN_ARG(bool, batch_first) = false;
  KILN_ARG(double, dropout) = 0.0;
  KILN_ARG(bool, bidirectional) = false;
};

namespace detail {

enum class RNNMode { RNN_TANH, RNN_RELU, LSTM, GRU };

// The options every sequence module has, in one place.
struct RNNOptionsBase {
  RNNMode mode = RNNMode::RNN_TANH;
  int64_t input_size = 0, hidden_size = 0, num_layers = 1, proj_size = 0;
  bool bias = true, batch_first = false, bidirectional = false;
  double dropout = 0;
};

// Parameters and the layer loop shared by RNN, LSTM and GRU.
class RNNImplBase : public Module {
 public:
  explicit RNNImplBase(const RNNOptionsBase& options);
  // U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) on every weight and bias.
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  // Every parameter, in registration order (layer by layer, forward direction first).
  std::vector<Tensor> all_weights() const;

 protected:
  // input: [T, N, I] or, with batch_first, [N, T, I]; unbatched [T, I]. hx: [L*D, N, P] (or
  // [L*D, P] unbatched), cx likewise with H (LSTM); undefined ones start at zero. Returns
  // (output, h_n, c_n) with c_n undefined except for LSTM.
  std::tuple<Tensor, Tensor, Tensor> run(const Tensor& input, Tensor hx, Tensor cx) const;
  // run over a packed batch: sequences of equal length run together as one full batch, so each
  // sequence's steps and final state are those of running it alone. hx/cx and the returned
  // states are in the batch's original order, as in libtorch.
  std::tuple<utils::rnn::PackedSequence, Tensor, Tensor> run_packed(
      const utils::rnn::PackedSequence& input, Tensor hx, Tensor cx) const;

  RNNOptionsBase base_;

 private:
  struct Weights {
    Tensor w_ih, w_hh, b_ih, b_hh, w_hr;
  };
  std::vector<Weights> weights_;  // index layer * num_directions + direction
};

}  // namespace detail

class RNNImpl : public detail::RNNImplBase {
  KILN_MODULE_CLONE(RNNImpl)
 public:
  RNNImpl(int64_t input_size, int64_t hidden_size) : RNNImpl(RNNOptions(input_size, hidden_size)) {}
  explicit RNNImpl(const RNNOptions& options);
  // -> (output, h_n)
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Tensor hx = {});
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(
      const utils::rnn::PackedSequence& packed_input, Tensor hx = {});
  RNNOptions options;
};
KILN_MODULE(RNN);

class LSTMImpl : public detail::RNNImplBase {
  KILN_MODULE_CLONE(LSTMImpl)
 public:
  LSTMImpl(int64_t input_size, int64_t hidden_size)
      : LSTMImpl(LSTMOptions(input_size, hidden_size)) {}
  explicit LSTMImpl(const LSTMOptions& options);
  // -> (output, (h_n, c_n)); hx = (h_0, c_0)
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(
      const Tensor& input, std::optional<std::tuple<Tensor, Tensor>> hx = {});
  std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> forward_with_packed_input(
      const utils::rnn::PackedSequence& packed_input,
      std::optional<std::tuple<Tensor, Tensor>> hx = {});
  LSTMOptions options;
};
KILN_MODULE(LSTM);

class GRUImpl : public detail::RNNImplBase {
  KILN_MODULE_CLONE(GRUImpl)
 public:
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(GRUOptions(input_size, hidden_size)) {}
  explicit GRUImpl(const GRUOptions& options);
  // -> (output, h_n)
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Tensor hx = {});
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(
      const utils::rnn::PackedSequence& packed_input, Tensor hx = {});
  GRUOptions options;
};
KILN_MODULE(GRU);

// ---- cells: one step, compositions of linear and pointwise ops ----

struct RNNCellOptions {
  RNNCellOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  KILN_ARG(int64_t, input_size);
  KILN_ARG(int64_t, hidden_size);
  KILN_ARG(bool, bias) = true;
  KILN_ARG(Nonlinearity, nonlinearity) = kTanh;  // kTanh or kReLU
};

struct LSTMCellOptions {
  LSTMCellOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  KILN_ARG(int64_t, input_size);
  KILN_ARG(int64_t, hidden_size);
  KILN_ARG(bool, bias) = true;
};

struct GRUCellOptions {
  GRUCellOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  KILN_ARG(int64_t, input_size);
  KILN_ARG(int64_t, hidden_size);
  KILN_ARG(bool, bias) = true;
};

namespace detail {

// weight_ih [G*H, I], weight_hh [G*H, H], bias_ih, bias_hh [G*H], uniformly initialised.
class RNNCellImplBase : public Module {
 public:
  RNNCellImplBase(const char* name, int64_t input_size, int64_t hidden_size, bool bias,
                  int64_t gates);
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  Tensor weight_ih, weight_hh, bias_ih, bias_hh;

 protected:
  // The input as [N, I] and the state as [N, H] (zeros when undefined); batched says whether
  // the input had a batch dim.
  std::tuple<Tensor, bool> batch_input(const Tensor& input) const;
  Tensor batch_state(const Tensor& state, const Tensor& input, bool batched,
                     const char* what) const;

  const char* name_;
  int64_t input_size_, hidden_size_;
  bool bias_;
};

}  // namespace detail

class RNNCellImpl : public detail::RNNCellImplBase {
  KILN_MODULE_CLONE(RNNCellImpl)
 public:
  RNNCellImpl(int64_t input_size, int64_t hidden_size)
      : RNNCellImpl(RNNCellOptions(input_size, hidden_size)) {}
  explicit RNNCellImpl(const RNNCellOptions& options);
  Tensor forward(const Tensor& input, const Tensor& hx = {});
  RNNCellOptions options;
};
KILN_MODULE(RNNCell);

class LSTMCellImpl : public detail::RNNCellImplBase {
  KILN_MODULE_CLONE(LSTMCellImpl)
 public:
  LSTMCellImpl(int64_t input_size, int64_t hidden_size)
      : LSTMCellImpl(LSTMCellOptions(input_size, hidden_size)) {}
  explicit LSTMCellImpl(const LSTMCellOptions& options);
  // -> (h_1, c_1)
  std::tuple<Tensor, Tensor> forward(const Tensor& input,
                                     std::optional<std::tuple<Tensor, Tensor>> hx = {});
  LSTMCellOptions options;
};
KILN_MODULE(LSTMCell);

class GRUCellImpl : public detail::RNNCellImplBase {
  KILN_MODULE_CLONE(GRUCellImpl)
 public:
  GRUCellImpl(int64_t input_size, int64_t hidden_size)
      : GRUCellImpl(GRUCellOptions(input_size, hidden_size)) {}
  explicit GRUCellImpl(const GRUCellOptions& options);
  Tensor forward(const Tensor& input, const Tensor& hx = {});
  GRUCellOptions options;
};
KILN_MODULE(GRUCell);

}  // namespace kiln::nn
