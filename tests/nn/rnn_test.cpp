// Recurrent modules against PyTorch 2.x (values from tests/nn/rnn_expected.py): two-layer
// bidirectional LSTM and GRU, LSTM with proj_size and batch_first, an unbatched relu RNN without
// bias; outputs, final states and gradients. Also the cells against one step of the sequence
// ops, float32 against float64 gradients, dropout between layers and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "kiln/kiln.h"
#include "kiln/nn/modules/rnn.h"
#include "kiln/ops/rnn.h"
#include "tests/nn/conv_pool_test_util.h"
#include "tests/nn/rnn_expected.h"

namespace kiln {
namespace {

using testing::error_of;
using testing::expect_values;
using testing::values;

Tensor formula(const std::vector<int64_t>& shape, const std::function<double(int64_t)>& f) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = f(k);
  return tensor(v, kFloat64).view(shape);
}

std::vector<int64_t> shape_of(const Tensor& t) {
  std::vector<int64_t> s;
  for (int64_t d = 0; d < t.dim(); ++d) s.push_back(t.size(d));
  return s;
}

// sin(0.7 k + 1), the loss weights of the generator script.
Tensor pattern_like(const Tensor& t) {
  return formula(shape_of(t), [](int64_t k) { return std::sin(0.7 * k + 1); });
}

// Parameter p, element k: 0.3 sin(0.1 k + p), in named_parameters() order (as the script).
void fill_parameters(nn::Module& m) {
  NoGradGuard no_grad;
  int64_t p = 0;
  for (auto& item : m.named_parameters()) {
    item.value().copy_(
        formula(shape_of(item.value()), [p](int64_t k) { return 0.3 * std::sin(0.1 * k + p); }));
    ++p;
  }
}

Tensor input_of(const std::vector<int64_t>& shape) {
  return formula(shape, [](int64_t k) { return std::cos(0.05 * k + 0.3); }).requires_grad_(true);
}
Tensor h0_of(const std::vector<int64_t>& shape) {
  return formula(shape, [](int64_t k) { return 0.2 * std::sin(0.3 * k); });
}
Tensor c0_of(const std::vector<int64_t>& shape) {
  return formula(shape, [](int64_t k) { return 0.1 * std::cos(0.2 * k); });
}

Tensor weighted_sum(const Tensor& t) { return (t * pattern_like(t)).sum(); }

// Per parameter: the sum of its gradient and its pattern-weighted sum, as the script prints.
void expect_parameter_grads(nn::Module& m, const std::vector<std::string>& names,
                            const std::vector<double>& sums) {
  ASSERT_EQ(m.named_parameters().keys(), names);
  size_t i = 0;
  for (auto& item : m.named_parameters()) {
    const Tensor& g = item.value().grad();
    ASSERT_TRUE(g.defined()) << item.key();
    EXPECT_NEAR(g.sum().item<double>(), sums[i], 1e-7) << item.key();
    EXPECT_NEAR(weighted_sum(g).item<double>(), sums[i + 1], 1e-7) << item.key();
    i += 2;
  }
}

TEST(LSTM, BidirectionalTwoLayersMatchesPyTorch) {
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true));
  lstm->to(kFloat64);
  fill_parameters(*lstm);
  Tensor x = input_of({3, 2, 3});
  auto [out, state] = lstm->forward(x, std::make_tuple(h0_of({4, 2, 4}), c0_of({4, 2, 4})));
  auto [h_n, c_n] = state;
  EXPECT_EQ(shape_of(out), (std::vector<int64_t>{3, 2, 8}));
  expect_values(out, rnn_expected::lstm_output);
  expect_values(h_n, rnn_expected::lstm_h_n);
  expect_values(c_n, rnn_expected::lstm_c_n);
  (weighted_sum(out) + weighted_sum(h_n) + weighted_sum(c_n)).backward();
  expect_values(x.grad(), rnn_expected::lstm_grad_x, 1e-8);
  expect_parameter_grads(*lstm, rnn_expected::lstm_names, rnn_expected::lstm_grad_sums);
}

TEST(GRU, BidirectionalTwoLayersMatchesPyTorch) {
  nn::GRU gru(nn::GRUOptions(3, 4).num_layers(2).bidirectional(true));
  gru->to(kFloat64);
  fill_parameters(*gru);
  Tensor x = input_of({3, 2, 3});
  auto [out, h_n] = gru->forward(x, h0_of({4, 2, 4}));
  expect_values(out, rnn_expected::gru_output);
  expect_values(h_n, rnn_expected::gru_h_n);
  (weighted_sum(out) + weighted_sum(h_n)).backward();
  expect_values(x.grad(), rnn_expected::gru_grad_x, 1e-8);
  expect_parameter_grads(*gru, rnn_expected::gru_names, rnn_expected::gru_grad_sums);
}

TEST(LSTM, ProjectionBatchFirstMatchesPyTorch) {
  nn::LSTM lstm(
      nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true).proj_size(2).batch_first(true));
  lstm->to(kFloat64);
  EXPECT_EQ(shape_of(lstm->named_parameters()["weight_hr_l1_reverse"]),
            (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(shape_of(lstm->named_parameters()["weight_ih_l1"]), (std::vector<int64_t>{16, 4}));
  EXPECT_EQ(shape_of(lstm->named_parameters()["weight_hh_l0"]), (std::vector<int64_t>{16, 2}));
  fill_parameters(*lstm);
  Tensor x = input_of({2, 3, 3});  // [N, T, I]
  auto [out, state] = lstm->forward(x);
  auto [h_n, c_n] = state;
  EXPECT_EQ(shape_of(out), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(shape_of(h_n), (std::vector<int64_t>{4, 2, 2}));
  EXPECT_EQ(shape_of(c_n), (std::vector<int64_t>{4, 2, 4}));
  expect_values(out, rnn_expected::lstm_proj_output);
  expect_values(h_n, rnn_expected::lstm_proj_h_n);
  expect_values(c_n, rnn_expected::lstm_proj_c_n);
  (weighted_sum(out) + weighted_sum(h_n) + weighted_sum(c_n)).backward();
  expect_values(x.grad(), rnn_expected::lstm_proj_grad_x, 1e-8);
  expect_parameter_grads(*lstm, rnn_expected::lstm_proj_names, rnn_expected::lstm_proj_grad_sums);
}

TEST(RNN, UnbatchedReluWithoutBiasMatchesPyTorch) {
  nn::RNN rnn(nn::RNNOptions(3, 4).num_layers(2).nonlinearity(kReLU).bias(false));
  rnn->to(kFloat64);
  fill_parameters(*rnn);
  Tensor x = input_of({3, 3});  // [L, I]
  auto [out, h_n] = rnn->forward(x, h0_of({2, 4}));
  EXPECT_EQ(shape_of(out), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(shape_of(h_n), (std::vector<int64_t>{2, 4}));
  expect_values(out, rnn_expected::rnn_relu_output);
  expect_values(h_n, rnn_expected::rnn_relu_h_n);
  (weighted_sum(out) + weighted_sum(h_n)).backward();
  expect_values(x.grad(), rnn_expected::rnn_relu_grad_x, 1e-8);
  expect_parameter_grads(*rnn, rnn_expected::rnn_relu_names, rnn_expected::rnn_relu_grad_sums);
}

TEST(RNN, DefaultInitialisationIsUniformInOneOverSqrtHidden) {
  nn::GRU gru(nn::GRUOptions(5, 16).num_layers(2));
  for (const Tensor& p : gru->parameters()) {
    EXPECT_LE(p.abs().max().item<double>(), 0.25);
    EXPECT_GT(p.abs().max().item<double>(), 0.15);  // spread over the whole range
  }
  EXPECT_EQ(gru->parameters().size(), 8u);
  EXPECT_EQ(gru->all_weights().size(), 8u);
}

// The cells (compositions of linear and pointwise ops) against one step of the sequence ops.
TEST(RNNCell, CellsMatchOneStepOfTheSequenceOps) {
  Tensor x = formula({2, 3}, [](int64_t k) { return std::sin(0.4 * k); });
  Tensor h = formula({2, 4}, [](int64_t k) { return 0.3 * std::cos(0.5 * k); });
  Tensor c = formula({2, 4}, [](int64_t k) { return 0.2 * std::sin(0.9 * k); });
  nn::LSTMCell lstm_cell(3, 4);
  lstm_cell->to(kFloat64);
  fill_parameters(*lstm_cell);
  auto [h1, c1] = lstm_cell->forward(x, std::make_tuple(h, c));
  auto [y, hn, cn] = lstm_layer(x.unsqueeze(0), h, c, lstm_cell->weight_ih, lstm_cell->weight_hh,
                                lstm_cell->bias_ih, lstm_cell->bias_hh);
  expect_values(h1, values(hn));
  expect_values(c1, values(cn));
  expect_values(y.select(0, 0), values(hn));

  nn::GRUCell gru_cell(3, 4);
  gru_cell->to(kFloat64);
  fill_parameters(*gru_cell);
  auto [gy, gh] = gru_layer(x.unsqueeze(0), h, gru_cell->weight_ih, gru_cell->weight_hh,
                            gru_cell->bias_ih, gru_cell->bias_hh);
  expect_values(gru_cell->forward(x, h), values(gh));

  nn::RNNCell rnn_cell(nn::RNNCellOptions(3, 4).nonlinearity(kReLU).bias(false));
  rnn_cell->to(kFloat64);
  fill_parameters(*rnn_cell);
  auto [ry, rh] = rnn_relu_layer(x.unsqueeze(0), h, rnn_cell->weight_ih, rnn_cell->weight_hh);
  expect_values(rnn_cell->forward(x, h), values(rh));
  // Unbatched input and a missing state (zeros).
  expect_values(rnn_cell->forward(x.select(0, 1)),
                values(rnn_cell->forward(x, zeros({2, 4}, kFloat64)).select(0, 1)));
  auto [uh, uc] = lstm_cell->forward(x.select(0, 0));
  EXPECT_EQ(shape_of(uh), (std::vector<int64_t>{4}));
  EXPECT_EQ(shape_of(uc), (std::vector<int64_t>{4}));
}

TEST(LSTM, Float32GradientsAgreeWithFloat64) {
  auto grads = [](ScalarType dt) {
    nn::LSTM lstm(nn::LSTMOptions(3, 4).bidirectional(true).proj_size(3));
    lstm->to(kFloat64);
    fill_parameters(*lstm);
    lstm->to(dt);
    Tensor x = input_of({5, 2, 3}).detach().to(dt).requires_grad_(true);
    auto [out, state] = lstm->forward(x);
    (weighted_sum(out).to(dt) + std::get<1>(state).sum()).backward();
    std::vector<Tensor> g{x.grad()};
    for (const Tensor& p : lstm->parameters()) g.push_back(p.grad());
    return g;
  };
  const std::vector<Tensor> g32 = grads(kFloat32), g64 = grads(kFloat64);
  ASSERT_EQ(g32.size(), g64.size());
  for (size_t i = 0; i < g32.size(); ++i) expect_values(g32[i], values(g64[i]), 1e-5);
}

TEST(GRU, DropoutBetweenLayersOnlyInTraining) {
  nn::GRU gru(nn::GRUOptions(3, 4).num_layers(2).dropout(0.5));
  Tensor x = input_of({4, 2, 3}).detach().to(kFloat32);
  gru->eval();
  const Tensor a = std::get<0>(gru->forward(x)), b = std::get<0>(gru->forward(x));
  expect_values(a, values(b), 0);
  gru->train();
  manual_seed(0);
  const Tensor c = std::get<0>(gru->forward(x));
  EXPECT_GT((c - a).abs().max().item<double>(), 1e-4);
}

TEST(RNN, SecondOrderGradientsAreNotRecorded) {
  // The *_backward entries are not differentiable: their gradients carry no graph.
  nn::RNN rnn(3, 4);
  Tensor x = input_of({2, 1, 3}).detach().to(kFloat32).requires_grad_(true);
  Tensor out = std::get<0>(rnn->forward(x));
  auto g = autograd::grad({out.sum()}, {x}, {}, true, true);
  EXPECT_FALSE(g[0].requires_grad());
}

TEST(RNN, ErrorMessagesNameTheShapes) {
  nn::LSTM lstm(3, 4);
  EXPECT_NE(error_of([&] {
              lstm->forward(zeros({5, 2, 6}));
            }).find("input.size(-1) must be equal to input_size. Expected 3, got 6"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              lstm->forward(zeros({1, 5, 2, 3}));
            }).find("LSTM: Expected input to be 2D or 3D, got 4D instead"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              lstm->forward(zeros({5, 2, 3}), std::make_tuple(zeros({1, 3, 4}), zeros({1, 2, 4})));
            }).find("Expected hidden[0] size (1, 2, 4), got [1, 3, 4]"),
            std::string::npos);
  nn::GRU gru(nn::GRUOptions(3, 4).bidirectional(true));
  EXPECT_NE(error_of([&] {
              gru->forward(zeros({5, 2, 3}), zeros({1, 2, 4}));
            }).find("Expected hidden size (2, 2, 4), got [1, 2, 4]"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              gru->forward(zeros({5, 3}), zeros({2, 1, 4}));
            }).find("For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"),
            std::string::npos);
  nn::GRUCell cell(3, 4);
  EXPECT_NE(error_of([&] {
              cell->forward(zeros({2, 5}));
            }).find("GRUCell: input has inconsistent input_size: got 5 expected 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              cell->forward(zeros({2, 3}), zeros({3, 4}));
            }).find("Input batch size 2 doesn't match hx batch size 3"),
            std::string::npos);
  // The op itself names the shapes.
  EXPECT_NE(error_of([&] {
              gru_layer(zeros({5, 2, 6}), zeros({2, 4}), zeros({12, 3}), zeros({12, 4}));
            })
                .find("gru: input size mismatch: input [5, 2, 6] has 6 features but w_ih [12, 3] "
                      "expects 3"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] {
        lstm_layer(zeros({5, 2, 3}), zeros({2, 4}), zeros({2, 5}), zeros({16, 3}), zeros({16, 4}));
      }).find("lstm: expected c0 of shape [2, 4], got [2, 5]"),
      std::string::npos);
  EXPECT_NE(error_of([] {
              nn::LSTM(nn::LSTMOptions(3, 4).proj_size(4));
            }).find("proj_size has to be a positive integer smaller than hidden_size"),
            std::string::npos);
}

// The sequence length may be symbolic: the ops' meta functions work on SymInts and do not
// specialise it (no guard is recorded).
TEST(RNN, MetaOutputsKeepASymbolicSequenceLength) {
  ShapeEnv env;
  const SymInt t = env.create_symbol(7);
  ModeGuard g(std::make_shared<MetaMode>());
  auto [y, h, c] = lstm_layer(empty_meta({t, 2, 3}, kFloat32), empty_meta({2, 2}, kFloat32),
                              empty_meta({2, 4}, kFloat32), empty_meta({16, 3}, kFloat32),
                              empty_meta({16, 2}, kFloat32), Tensor(), Tensor(),
                              empty_meta({2, 4}, kFloat32), true);
  EXPECT_TRUE(y.is_meta());
  EXPECT_TRUE(y.sym_size(0).is_symbolic());
  EXPECT_EQ(y.sym_size(0).str(), t.str());
  EXPECT_EQ(shape_of(h), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(shape_of(c), (std::vector<int64_t>{2, 4}));
  auto [gy, gh] = gru_layer(empty_meta({t, 2, 3}, kFloat64), empty_meta({2, 4}, kFloat64),
                            empty_meta({12, 3}, kFloat64), empty_meta({12, 4}, kFloat64));
  EXPECT_TRUE(gy.sym_size(0).is_symbolic());
  EXPECT_TRUE(env.guards().empty());
}

}  // namespace
}  // namespace kiln
