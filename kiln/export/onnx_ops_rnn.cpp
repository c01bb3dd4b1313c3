// ONNX translations of the recurrent layers: each Kiln lstm / gru / rnn_tanh / rnn_relu op (one
// layer, one direction, sequence-first) becomes one ONNX LSTM / GRU / RNN node with direction
// "forward" or "reverse". ONNX orders the gates differently: LSTM i, o, f, c for PyTorch's
// i, f, g, o; GRU z, r, h for r, z, n (with linear_before_reset=1, PyTorch's n gate). Captured
// weights are reordered here into new initializers; computed ones by Slice/Concat nodes.
#include "kiln/core/grad_mode.h"
#include "kiln/export/onnx_ops.h"
#include "kiln/ops/ops.h"

namespace kiln::onnx_detail {

namespace {

// Where each ONNX gate comes from among PyTorch's.
const std::vector<int64_t> kLstmOrder{0, 3, 1, 2};
const std::vector<int64_t> kGruOrder{1, 0, 2};
const std::vector<int64_t> kRnnOrder{0};

Tensor reorder(const Tensor& t, const std::vector<int64_t>& order, int64_t hidden) {
  NoGradGuard no_grad;
  std::vector<Tensor> gates;
  for (int64_t g : order) gates.push_back(t.narrow(0, g * hidden, hidden));
  return cat(gates, 0);
}

std::string reorder_nodes(const OpCall& c, const std::string& x, const std::vector<int64_t>& order,
                          int64_t hidden) {
  std::vector<std::string> gates;
  for (int64_t g : order) {
    gates.push_back(
        c.e.op("Slice", {x, c.e.ints({g * hidden}), c.e.ints({(g + 1) * hidden}), c.e.ints({0})}));
  }
  return gates.size() == 1 ? gates[0] : c.e.op("Concat", gates, {{"axis", int64_t{0}}});
}

// Weight input i ([G*H, X]) as ONNX's [1, G*H, X] in its gate order.
std::string weights(const OpCall& c, size_t i, const std::vector<int64_t>& order, int64_t hidden) {
  const ScalarType t = c.output().dtype;
  if (const Tensor* w = c.e.captured_tensor(c.node.inputs[i])) {
    return c.e.initializer(reorder(*w, order, hidden).unsqueeze(0).to(t),
                           c.e.captured_name(c.node.inputs[i]) + "_onnx");
  }
  return c.e.op("Unsqueeze", {reorder_nodes(c, c.in(i, t), order, hidden), c.e.ints({0})});
}

// Biases b_ih (input i) and b_hh (i + 1) as ONNX's B [1, 2*G*H]; "" when both are None.
std::string biases(const OpCall& c, size_t i, const std::vector<int64_t>& order, int64_t hidden) {
  if (!c.has(i) && !c.has(i + 1)) return "";
  const ScalarType t = c.output().dtype;
  const int64_t n = static_cast<int64_t>(order.size()) * hidden;
  const Tensor* b_ih = c.has(i) ? c.e.captured_tensor(c.node.inputs[i]) : nullptr;
  const Tensor* b_hh = c.has(i + 1) ? c.e.captured_tensor(c.node.inputs[i + 1]) : nullptr;
  if ((b_ih || !c.has(i)) && (b_hh || !c.has(i + 1))) {
    const Tensor zero = zeros({n}, kiln::dtype(t));
    const Tensor a = b_ih ? reorder(*b_ih, order, hidden).to(t) : zero;
    const Tensor b = b_hh ? reorder(*b_hh, order, hidden).to(t) : zero;
    NoGradGuard no_grad;
    return c.e.initializer(cat({a, b}, 0).unsqueeze(0), "rnn_bias");
  }
  auto part = [&](size_t k) {
    return c.has(k) ? reorder_nodes(c, c.in(k, t), order, hidden)
                    : c.e.initializer(zeros({n}, kiln::dtype(t)), "rnn_bias");
  };
  const std::string both = c.e.op("Concat", {part(i), part(i + 1)}, {{"axis", int64_t{0}}});
  return c.e.op("Unsqueeze", {both, c.e.ints({0})});
}

// type: "LSTM", "GRU" or "RNN"; `activation` for RNN.
Translation recurrent(std::string type, std::string activation = "") {
  return [type, activation](const OpCall& c) {
    Emitter& e = c.e;
    const bool lstm = type == "LSTM";
    const size_t w = lstm ? 3 : 2;  // index of w_ih
    if (lstm && c.has(7)) c.fail("a projection (proj_size) has no ONNX LSTM counterpart");
    const std::vector<int64_t>& order = lstm ? kLstmOrder : type == "GRU" ? kGruOrder : kRnnOrder;
    const SymInt& h = c.input(w + 1).sizes.at(1);  // w_hh [G*H, H]
    if (h.is_symbolic()) c.fail("a dynamic hidden size");
    const int64_t hidden = h.maybe_int().value();
    const ScalarType t = c.output().dtype;
    auto state = [&](size_t i) { return e.op("Unsqueeze", {c.in(i, t), e.ints({0})}); };

    std::vector<std::string> in{c.in(0, t),
                                weights(c, w, order, hidden),
                                weights(c, w + 1, order, hidden),
                                biases(c, w + 2, order, hidden),
                                "",  // sequence_lens: every sequence is full length
                                state(1)};
    if (lstm) in.push_back(state(2));
    std::vector<NodeAttr> attrs{{"hidden_size", hidden},
                                {"direction", std::string(c.attrs().b(0) ? "reverse" : "forward")}};
    if (type == "GRU") attrs.push_back({"linear_before_reset", int64_t{1}});
    if (!activation.empty()) attrs.push_back({"activations", std::vector<std::string>{activation}});

    const size_t outputs = lstm ? 3 : 2;
    std::vector<std::string> out;
    for (size_t i = 0; i < outputs; ++i) out.push_back(e.fresh(type));
    e.op_into(out, type, in, attrs);
    // Y [T, 1, N, H] and the states [1, N, H] lose their direction dim.
    e.op_into({c.out(0)}, "Squeeze", {out[0], e.ints({1})});
    for (size_t i = 1; i < outputs; ++i)
      if (c.used(i)) e.op_into({c.out(i)}, "Squeeze", {out[i], e.ints({0})});
  };
}

}  // namespace

void add_rnn_ops(OpTable& table) {
  table["lstm"] = recurrent("LSTM");
  table["gru"] = recurrent("GRU");
  table["rnn_tanh"] = recurrent("RNN", "Tanh");
  table["rnn_relu"] = recurrent("RNN", "Relu");
}

}  // namespace kiln::onnx_detail
