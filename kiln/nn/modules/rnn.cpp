#include "kiln/nn/modules/rnn.h"

#include <cmath>
#include <functional>
#include <map>
#include <sstream>
#include <string>

#include "kiln/nn/init.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/rnn.h"

namespace kiln::nn {
namespace detail {
namespace {

const char* mode_name(RNNMode mode) {
  switch (mode) {
    case RNNMode::LSTM:
      return "LSTM";
    case RNNMode::GRU:
      return "GRU";
    default:
      return "RNN";
  }
}

int64_t gate_count(RNNMode mode) {
  return mode == RNNMode::LSTM ? 4 : mode == RNNMode::GRU ? 3 : 1;
}

// "(2, 3, 4)", as PyTorch prints an expected hidden size.
std::string tuple_string(const SymShape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ")";
  return os.str();
}

void uniform_all(const std::vector<Tensor>& params, int64_t hidden_size) {
  const double bound = hidden_size > 0 ? 1.0 / std::sqrt(static_cast<double>(hidden_size)) : 0.0;
  for (const Tensor& p : params) init::uniform_(p, -bound, bound);
}

Nonlinearity checked_nonlinearity(Nonlinearity n, const char* who) {
  KILN_CHECK(n == kTanh || n == kReLU, who, ": Unknown nonlinearity; expected kTanh or kReLU");
  return n;
}

}  // namespace

RNNImplBase::RNNImplBase(const RNNOptionsBase& options) : base_(options) {
  const char* name = mode_name(base_.mode);
  KILN_CHECK(base_.input_size >= 0 && base_.hidden_size > 0, name,
             ": hidden_size must be greater than zero and input_size non-negative, got ",
             base_.hidden_size, " and ", base_.input_size);
  KILN_CHECK(base_.num_layers > 0, name, ": num_layers must be greater than zero, got ",
             base_.num_layers);
  KILN_CHECK(base_.dropout >= 0 && base_.dropout <= 1,
             "dropout should be a number in range [0, 1] representing the probability of an "
             "element being zeroed, got ",
             base_.dropout);
  KILN_CHECK(base_.proj_size >= 0 && base_.proj_size < base_.hidden_size,
             "proj_size has to be a positive integer smaller than hidden_size, got ",
             base_.proj_size);
  const int64_t dirs = base_.bidirectional ? 2 : 1, gh = gate_count(base_.mode) * base_.hidden_size;
  const int64_t real_hidden = base_.proj_size > 0 ? base_.proj_size : base_.hidden_size;
  for (int64_t layer = 0; layer < base_.num_layers; ++layer) {
    const int64_t in = layer == 0 ? base_.input_size : real_hidden * dirs;
    for (int64_t dir = 0; dir < dirs; ++dir) {
      const std::string sfx = "_l" + std::to_string(layer) + (dir == 1 ? "_reverse" : "");
      Weights w;
      w.w_ih = register_parameter("weight_ih" + sfx, kiln::empty({gh, in}));
      w.w_hh = register_parameter("weight_hh" + sfx, kiln::empty({gh, real_hidden}));
      if (base_.bias) {
        w.b_ih = register_parameter("bias_ih" + sfx, kiln::empty({gh}));
        w.b_hh = register_parameter("bias_hh" + sfx, kiln::empty({gh}));
      }
      if (base_.proj_size > 0)
        w.w_hr = register_parameter("weight_hr" + sfx,
                                    kiln::empty({base_.proj_size, base_.hidden_size}));
      weights_.push_back(w);
    }
  }
  reset_parameters();
}

void RNNImplBase::reset_parameters() { uniform_all(all_weights(), base_.hidden_size); }

std::vector<Tensor> RNNImplBase::all_weights() const { return parameters(false); }

void RNNImplBase::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "kiln::nn::" << mode_name(base_.mode)
         << "(input_size=" << base_.input_size << ", hidden_size=" << base_.hidden_size
         << ", num_layers=" << base_.num_layers << ", bias=" << base_.bias
         << ", batch_first=" << base_.batch_first << ", dropout=" << base_.dropout
         << ", bidirectional=" << base_.bidirectional;
  if (base_.proj_size > 0) stream << ", proj_size=" << base_.proj_size;
  if (base_.mode == RNNMode::RNN_RELU) stream << ", nonlinearity=relu";
  stream << ")";
}

std::tuple<Tensor, Tensor, Tensor> RNNImplBase::run(const Tensor& input, Tensor hx,
                                                    Tensor cx) const {
  const char* name = mode_name(base_.mode);
  const bool lstm = base_.mode == RNNMode::LSTM;
  KILN_CHECK(input.dim() == 2 || input.dim() == 3, name, ": Expected input to be 2D or 3D, got ",
             input.dim(), "D instead");
  const bool batched = input.dim() == 3;
  const Tensor x =
      batched ? (base_.batch_first ? input.transpose(0, 1) : input) : input.unsqueeze(1);
  KILN_CHECK(x.sym_size(-1) == base_.input_size,
             "input.size(-1) must be equal to input_size. Expected ", base_.input_size, ", got ",
             x.sym_size(-1));
  const int64_t dirs = base_.bidirectional ? 2 : 1, layers = base_.num_layers;
  const int64_t real_hidden = base_.proj_size > 0 ? base_.proj_size : base_.hidden_size;
  const SymInt n = x.sym_size(1);
  const SymShape h_shape{layers * dirs, n, real_hidden},
      c_shape{layers * dirs, n, base_.hidden_size};
  if (hx.defined()) {
    const int64_t want = batched ? 3 : 2;
    const char* state = lstm ? "hx and cx" : "hx";
    KILN_CHECK(hx.dim() == want && (!lstm || cx.dim() == want), "For ",
               batched ? "batched 3-D" : "unbatched 2-D", " input, ", state, " should also be ",
               want, "-D but got ", hx.dim(), "-D tensor");
    if (!batched) {
      hx = hx.unsqueeze(1);
      if (lstm) cx = cx.unsqueeze(1);
    }
    KILN_CHECK(hx.sym_sizes() == SymIntArrayRef(h_shape), "Expected hidden", lstm ? "[0]" : "",
               " size ", tuple_string(h_shape), ", got ", hx.sym_sizes());
    KILN_CHECK(!lstm || cx.sym_sizes() == SymIntArrayRef(c_shape), "Expected hidden[1] size ",
               tuple_string(c_shape), ", got ", cx.sym_sizes());
  } else {
    hx = zeros(h_shape, x.options());
    if (lstm) cx = zeros(c_shape, x.options());
  }

  Tensor layer_input = x;
  std::vector<Tensor> h_n, c_n;
  for (int64_t layer = 0; layer < layers; ++layer) {
    std::vector<Tensor> outputs;
    for (int64_t dir = 0; dir < dirs; ++dir) {
      const int64_t k = layer * dirs + dir;
      const Weights& w = weights_[k];
      const Tensor h0 = hx.select(0, k);
      const bool reverse = dir == 1;
      Tensor y, h, c;
      switch (base_.mode) {
        case RNNMode::LSTM:
          std::tie(y, h, c) = lstm_layer(layer_input, h0, cx.select(0, k), w.w_ih, w.w_hh, w.b_ih,
                                         w.b_hh, w.w_hr, reverse);
          c_n.push_back(c);
          break;
        case RNNMode::GRU:
          std::tie(y, h) = gru_layer(layer_input, h0, w.w_ih, w.w_hh, w.b_ih, w.b_hh, reverse);
          break;
        case RNNMode::RNN_TANH:
          std::tie(y, h) = rnn_tanh_layer(layer_input, h0, w.w_ih, w.w_hh, w.b_ih, w.b_hh, reverse);
          break;
        case RNNMode::RNN_RELU:
          std::tie(y, h) = rnn_relu_layer(layer_input, h0, w.w_ih, w.w_hh, w.b_ih, w.b_hh, reverse);
          break;
      }
      outputs.push_back(y);
      h_n.push_back(h);
    }
    layer_input = dirs == 1 ? outputs[0] : cat(outputs, -1);
    if (base_.dropout > 0 && is_training() && layer + 1 < layers)
      layer_input = kiln::dropout(layer_input, base_.dropout, true);
  }
  Tensor output = layer_input, hn = stack(h_n, 0), cn = lstm ? stack(c_n, 0) : Tensor();
  if (!batched) {
    output = output.select(1, 0);
    hn = hn.select(1, 0);
    if (lstm) cn = cn.select(1, 0);
  } else if (base_.batch_first) {
    output = output.transpose(0, 1);
  }
  return {output, hn, cn};
}

std::tuple<utils::rnn::PackedSequence, Tensor, Tensor> RNNImplBase::run_packed(
    const utils::rnn::PackedSequence& input, Tensor hx, Tensor cx) const {
  auto [padded, lengths] = utils::rnn::pad_packed_sequence(input);  // [T, B, I]
  const int64_t steps = padded.size(0);
  std::map<int64_t, std::vector<int64_t>, std::greater<>> by_length;
  for (int64_t b = 0; b < lengths.size(0); ++b)
    by_length[lengths.data_ptr<int64_t>()[b]].push_back(b);

  const bool lstm = base_.mode == RNNMode::LSTM;
  std::vector<Tensor> ys, hs, cs;
  std::vector<int64_t> order;
  for (const auto& [length, members] : by_length) {
    const Tensor index = tensor(members);
    Tensor x = padded.narrow(0, 0, length).index_select(1, index);
    if (base_.batch_first) x = x.transpose(0, 1);
    auto [y, h, c] = run(x, hx.defined() ? hx.index_select(1, index) : Tensor(),
                         cx.defined() ? cx.index_select(1, index) : Tensor());
    if (base_.batch_first) y = y.transpose(0, 1);
    if (length < steps) y = cat({y, zeros({steps - length, y.size(1), y.size(2)}, y.options())}, 0);
    ys.push_back(y);
    hs.push_back(h);
    if (lstm) cs.push_back(c);
    order.insert(order.end(), members.begin(), members.end());
  }
  const Tensor restore = utils::rnn::invert_permutation(tensor(order));
  const Tensor output = cat(ys, 1).index_select(1, restore);
  return {utils::rnn::detail::repack_like(output, input), cat(hs, 1).index_select(1, restore),
          lstm ? cat(cs, 1).index_select(1, restore) : Tensor()};
}

// ---- cells ----

RNNCellImplBase::RNNCellImplBase(const char* name, int64_t input_size, int64_t hidden_size,
                                 bool bias, int64_t gates)
    : name_(name), input_size_(input_size), hidden_size_(hidden_size), bias_(bias) {
  KILN_CHECK(input_size >= 0 && hidden_size > 0, name,
             ": hidden_size must be greater than zero and input_size non-negative, got ",
             hidden_size, " and ", input_size);
  weight_ih = register_parameter("weight_ih", kiln::empty({gates * hidden_size, input_size}));
  weight_hh = register_parameter("weight_hh", kiln::empty({gates * hidden_size, hidden_size}));
  if (bias) {
    bias_ih = register_parameter("bias_ih", kiln::empty({gates * hidden_size}));
    bias_hh = register_parameter("bias_hh", kiln::empty({gates * hidden_size}));
  }
  reset_parameters();
}

void RNNCellImplBase::reset_parameters() { uniform_all(parameters(false), hidden_size_); }

void RNNCellImplBase::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "kiln::nn::" << name_ << "(" << input_size_ << ", " << hidden_size_
         << ", bias=" << bias_ << ")";
}

std::tuple<Tensor, bool> RNNCellImplBase::batch_input(const Tensor& input) const {
  KILN_CHECK(input.dim() == 1 || input.dim() == 2, name_, ": Expected input to be 1D or 2D, got ",
             input.dim(), "D instead");
  KILN_CHECK(input.sym_size(-1) == input_size_, name_, ": input has inconsistent input_size: got ",
             input.sym_size(-1), " expected ", input_size_, " (input shape ", input.sym_sizes(),
             ")");
  const bool batched = input.dim() == 2;
  return {batched ? input : input.unsqueeze(0), batched};
}

Tensor RNNCellImplBase::batch_state(const Tensor& state, const Tensor& input, bool batched,
                                    const char* what) const {
  if (!state.defined()) return zeros({input.sym_size(0), SymInt(hidden_size_)}, input.options());
  KILN_CHECK(state.dim() == (batched ? 2 : 1), name_, ": Expected ", what, " to be ",
             batched ? "2D" : "1D", " for ", batched ? "batched" : "unbatched", " input, got ",
             state.dim(), "D instead");
  const Tensor s = batched ? state : state.unsqueeze(0);
  KILN_CHECK(s.sym_size(1) == hidden_size_, name_, ": ", what,
             " has inconsistent hidden_size: got ", s.sym_size(1), ", expected ", hidden_size_);
  KILN_CHECK(s.sym_size(0) == input.sym_size(0), name_, ": Input batch size ", input.sym_size(0),
             " doesn't match ", what, " batch size ", s.sym_size(0));
  return s;
}

}  // namespace detail

namespace {

detail::RNNOptionsBase base_of(const RNNOptions& o) {
  const Nonlinearity nl = detail::checked_nonlinearity(o.nonlinearity(), "RNN");
  return {nl == kTanh ? detail::RNNMode::RNN_TANH : detail::RNNMode::RNN_RELU,
          o.input_size(),
          o.hidden_size(),
          o.num_layers(),
          0,
          o.bias(),
          o.batch_first(),
          o.bidirectional(),
          o.dropout()};
}

detail::RNNOptionsBase base_of(const LSTMOptions& o) {
  return {detail::RNNMode::LSTM, o.input_size(),    o.hidden_size(),
          o.num_layers(),        o.proj_size(),     o.bias(),
          o.batch_first(),       o.bidirectional(), o.dropout()};
}

detail::RNNOptionsBase base_of(const GRUOptions& o) {
  return {detail::RNNMode::GRU, o.input_size(),    o.hidden_size(), o.num_layers(), 0, o.bias(),
          o.batch_first(),      o.bidirectional(), o.dropout()};
}

}  // namespace

RNNImpl::RNNImpl(const RNNOptions& options_) : RNNImplBase(base_of(options_)), options(options_) {}

std::tuple<Tensor, Tensor> RNNImpl::forward(const Tensor& input, Tensor hx) {
  auto [output, h_n, unused] = run(input, std::move(hx), Tensor());
  return {output, h_n};
}

std::tuple<utils::rnn::PackedSequence, Tensor> RNNImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& packed_input, Tensor hx) {
  auto [output, h_n, unused] = run_packed(packed_input, std::move(hx), Tensor());
  return {output, h_n};
}

LSTMImpl::LSTMImpl(const LSTMOptions& options_)
    : RNNImplBase(base_of(options_)), options(options_) {}

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTMImpl::forward(
    const Tensor& input, std::optional<std::tuple<Tensor, Tensor>> hx) {
  using State = std::tuple<Tensor, Tensor>;
  run_forward_pre_hooks(input);
  if (const auto* f =
          call_override<std::tuple<Tensor, State>(const Tensor&, const std::optional<State>&)>())
    return (*f)(input, hx);
  Tensor h0, c0;
  if (hx) std::tie(h0, c0) = *hx;
  KILN_CHECK(h0.defined() == c0.defined(), "LSTM: hx must hold both h_0 and c_0 or neither");
  auto [output, h_n, c_n] = run(input, h0, c0);
  return {output, {h_n, c_n}};
}

std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>>
LSTMImpl::forward_with_packed_input(const utils::rnn::PackedSequence& packed_input,
                                    std::optional<std::tuple<Tensor, Tensor>> hx) {
  Tensor h0, c0;
  if (hx) std::tie(h0, c0) = *hx;
  KILN_CHECK(h0.defined() == c0.defined(), "LSTM: hx must hold both h_0 and c_0 or neither");
  auto [output, h_n, c_n] = run_packed(packed_input, h0, c0);
  return {output, {h_n, c_n}};
}

GRUImpl::GRUImpl(const GRUOptions& options_) : RNNImplBase(base_of(options_)), options(options_) {}

std::tuple<Tensor, Tensor> GRUImpl::forward(const Tensor& input, Tensor hx) {
  auto [output, h_n, unused] = run(input, std::move(hx), Tensor());
  return {output, h_n};
}

std::tuple<utils::rnn::PackedSequence, Tensor> GRUImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& packed_input, Tensor hx) {
  auto [output, h_n, unused] = run_packed(packed_input, std::move(hx), Tensor());
  return {output, h_n};
}

RNNCellImpl::RNNCellImpl(const RNNCellOptions& options_)
    : RNNCellImplBase("RNNCell", options_.input_size(), options_.hidden_size(), options_.bias(), 1),
      options(options_) {
  detail::checked_nonlinearity(options.nonlinearity(), "RNNCell");
}

Tensor RNNCellImpl::forward(const Tensor& input, const Tensor& hx) {
  auto [x, batched] = batch_input(input);
  const Tensor h = batch_state(hx, x, batched, "hx");
  const Tensor pre = linear(x, weight_ih, bias_ih) + linear(h, weight_hh, bias_hh);
  const Tensor out = options.nonlinearity() == kTanh ? pre.tanh() : pre.relu();
  return batched ? out : out.select(0, 0);
}

LSTMCellImpl::LSTMCellImpl(const LSTMCellOptions& options_)
    : RNNCellImplBase("LSTMCell", options_.input_size(), options_.hidden_size(), options_.bias(),
                      4),
      options(options_) {}

std::tuple<Tensor, Tensor> LSTMCellImpl::forward(const Tensor& input,
                                                 std::optional<std::tuple<Tensor, Tensor>> hx) {
  auto [x, batched] = batch_input(input);
  Tensor h0, c0;
  if (hx) std::tie(h0, c0) = *hx;
  const Tensor h = batch_state(h0, x, batched, "hx[0]");
  const Tensor c = batch_state(c0, x, batched, "hx[1]");
  const std::vector<Tensor> g =
      (linear(x, weight_ih, bias_ih) + linear(h, weight_hh, bias_hh)).chunk(4, 1);
  const Tensor c1 = g[1].sigmoid() * c + g[0].sigmoid() * g[2].tanh();
  const Tensor h1 = g[3].sigmoid() * c1.tanh();
  if (batched) return {h1, c1};
  return {h1.select(0, 0), c1.select(0, 0)};
}

GRUCellImpl::GRUCellImpl(const GRUCellOptions& options_)
    : RNNCellImplBase("GRUCell", options_.input_size(), options_.hidden_size(), options_.bias(), 3),
      options(options_) {}

Tensor GRUCellImpl::forward(const Tensor& input, const Tensor& hx) {
  auto [x, batched] = batch_input(input);
  const Tensor h = batch_state(hx, x, batched, "hx");
  const std::vector<Tensor> gi = linear(x, weight_ih, bias_ih).chunk(3, 1);
  const std::vector<Tensor> gh = linear(h, weight_hh, bias_hh).chunk(3, 1);
  const Tensor r = (gi[0] + gh[0]).sigmoid(), z = (gi[1] + gh[1]).sigmoid();
  const Tensor n = (gi[2] + r * gh[2]).tanh();
  const Tensor h1 = n + z * (h - n);
  return batched ? h1 : h1.select(0, 0);
}

}  // namespace kiln::nn
