// nn::utils::rnn: packing layouts as PyTorch builds them, and recurrent modules over packed
// batches giving each sequence what it gets when run alone.
#include <gtest/gtest.h>

#include <vector>

#include "kiln/kiln.h"

namespace kiln::nn {
namespace {

using utils::rnn::PackedSequence;

std::vector<int64_t> ints(const Tensor& t) {
  const Tensor c = t.to(kInt64).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// [T = 3, B = 3, 1] with step t of sequence b holding 10 * b + t.
Tensor padded_batch() {
  return (arange(3).reshape({3, 1, 1}) + arange(3).reshape({1, 3, 1}) * 10).to(kFloat32);
}

TEST(PackedSequence, PacksLongestFirstAsPyTorch) {
  // Lengths 2, 3, 1: PyTorch sorts to 3, 2, 1 (sorted_indices [1, 0, 2]).
  const PackedSequence p =
      utils::rnn::pack_padded_sequence(padded_batch(), tensor({2, 3, 1}), false, false);
  EXPECT_EQ(ints(p.batch_sizes()), (std::vector<int64_t>{3, 2, 1}));
  EXPECT_EQ(ints(p.sorted_indices()), (std::vector<int64_t>{1, 0, 2}));
  EXPECT_EQ(ints(p.unsorted_indices()), (std::vector<int64_t>{1, 0, 2}));
  EXPECT_EQ(ints(p.data().flatten()), (std::vector<int64_t>{10, 0, 20, 11, 1, 12}));

  auto [padded, lengths] = utils::rnn::pad_packed_sequence(p, /*batch_first=*/false, -1.0);
  EXPECT_EQ(ints(lengths), (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(ints(padded.flatten()), (std::vector<int64_t>{0, 10, 20, 1, 11, -1, -1, 12, -1}));

  EXPECT_THROW(utils::rnn::pack_padded_sequence(padded_batch(), tensor({2, 3, 1})), Error);
  EXPECT_THROW(utils::rnn::pack_padded_sequence(padded_batch(), tensor({4, 3, 1}), false, false),
               Error);
  EXPECT_THROW(utils::rnn::pack_padded_sequence(padded_batch(), tensor({2, 3})), Error);
}

TEST(PackedSequence, PadSequenceBatchFirstLeftAndTotalLength) {
  const std::vector<Tensor> seqs{tensor({1.0f, 2.0f}), tensor({3.0f}), tensor({4.0f, 5.0f, 6.0f})};
  EXPECT_EQ(ints(utils::rnn::pad_sequence(seqs, true).flatten()),
            (std::vector<int64_t>{1, 2, 0, 3, 0, 0, 4, 5, 6}));
  EXPECT_EQ(ints(utils::rnn::pad_sequence(seqs, true, 9, "left").flatten()),
            (std::vector<int64_t>{9, 1, 2, 9, 9, 3, 4, 5, 6}));
  const PackedSequence p = utils::rnn::pack_sequence(seqs, /*enforce_sorted=*/false);
  auto [padded, lengths] = utils::rnn::pad_packed_sequence(p, true, 0.0, /*total_length=*/5);
  EXPECT_EQ(padded.sizes(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(ints(lengths), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_THROW(utils::rnn::pad_packed_sequence(p, true, 0.0, 2), Error);
}

TEST(PackedSequence, GradientsFlowThroughPackAndPad) {
  const Tensor x = randn({3, 2, 2}).requires_grad_();
  const PackedSequence p = utils::rnn::pack_padded_sequence(x, tensor({3, 1}));
  std::get<0>(utils::rnn::pad_packed_sequence(p)).sum().backward();
  // Steps past a sequence's end take no part: their gradient is 0, the others' 1.
  const Tensor expected =
      tensor(std::vector<float>{1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0}).reshape({3, 2, 2});
  EXPECT_TRUE(x.grad().equal(expected));
}

// Each sequence of a packed batch must give what running it alone
// gives: its outputs, zeros past its end, and its final state.
template <class Forward, class Alone>
void expect_matches_running_alone(bool batch_first, const Forward& forward, const Alone& alone) {
  const std::vector<int64_t> lengths{2, 4, 1};
  const Tensor x = randn({4, 3, 3});  // [T, B, I]
  const PackedSequence packed = utils::rnn::pack_padded_sequence(
      batch_first ? x.transpose(0, 1) : x, tensor(lengths), batch_first, /*enforce_sorted=*/false);
  PackedSequence out_packed;
  Tensor h_n;
  std::tie(out_packed, h_n) = forward(packed);
  auto [out, out_lengths] = utils::rnn::pad_packed_sequence(out_packed, batch_first);
  if (batch_first) out = out.transpose(0, 1);
  EXPECT_EQ(ints(out_lengths), lengths);
  for (int64_t b = 0; b < 3; ++b) {
    const int64_t len = lengths[static_cast<size_t>(b)];
    Tensor seq = x.narrow(0, 0, len).narrow(1, b, 1);
    if (batch_first) seq = seq.transpose(0, 1);
    Tensor y, h;
    std::tie(y, h) = alone(seq, b);
    if (batch_first) y = y.transpose(0, 1);
    EXPECT_TRUE(allclose(out.narrow(0, 0, len).narrow(1, b, 1), y, 1e-5, 1e-6)) << "sequence " << b;
    EXPECT_TRUE(out.narrow(0, len, 4 - len).narrow(1, b, 1).eq(0).all().item<bool>());
    EXPECT_TRUE(allclose(h_n.narrow(1, b, 1), h, 1e-5, 1e-6)) << "h_n of sequence " << b;
  }
}

TEST(PackedSequence, LstmMatchesEachSequenceAlone) {
  manual_seed(3);
  for (bool batch_first : {false, true}) {
    LSTM lstm(LSTMOptions(3, 4).num_layers(2).bidirectional(true).batch_first(batch_first));
    expect_matches_running_alone(
        batch_first,
        [&](const PackedSequence& p) {
          auto [out, state] = lstm->forward_with_packed_input(p);
          return std::make_tuple(out, std::get<0>(state));
        },
        [&](const Tensor& seq, int64_t) {
          auto [y, state] = lstm->forward(seq);
          return std::make_tuple(y, std::get<0>(state));
        });
  }
}

TEST(PackedSequence, GruAndRnnMatchEachSequenceAloneWithInitialState) {
  manual_seed(4);
  GRU gru(GRUOptions(3, 5).bidirectional(true));
  const Tensor h0 = randn({2, 3, 5});
  expect_matches_running_alone(
      false,
      [&](const PackedSequence& p) {
        auto [out, h] = gru->forward_with_packed_input(p, h0);
        return std::make_tuple(out, h);
      },
      [&](const Tensor& seq, int64_t b) { return gru->forward(seq, h0.narrow(1, b, 1)); });
  RNN rnn(RNNOptions(3, 2).num_layers(2));
  expect_matches_running_alone(
      false, [&](const PackedSequence& p) { return rnn->forward_with_packed_input(p); },
      [&](const Tensor& seq, int64_t) { return rnn->forward(seq); });
}

TEST(PackedSequence, LstmGradientsMatchPerSequenceSums) {
  manual_seed(5);
  LSTM lstm(LSTMOptions(2, 3));
  const Tensor x = randn({3, 2, 2}).requires_grad_();
  const PackedSequence p = utils::rnn::pack_padded_sequence(x, tensor({3, 2}));
  auto [out, state] = lstm->forward_with_packed_input(p);
  out.data().sum().backward();
  const Tensor packed_grad = x.grad().clone();
  const Tensor packed_weight_grad = lstm->parameters()[0].grad().clone();

  lstm->zero_grad();
  const Tensor x2 = x.detach().clone().requires_grad_();
  const Tensor alone = std::get<0>(lstm->forward(x2.narrow(1, 0, 1))).sum() +
                       std::get<0>(lstm->forward(x2.narrow(0, 0, 2).narrow(1, 1, 1))).sum();
  alone.backward();
  EXPECT_TRUE(allclose(packed_grad, x2.grad(), 1e-5, 1e-6));
  EXPECT_TRUE(allclose(packed_weight_grad, lstm->parameters()[0].grad(), 1e-5, 1e-6));
}

}  // namespace
}  // namespace kiln::nn
