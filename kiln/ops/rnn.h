#pragma once
// Recurrent layers as single ops: one layer, one direction, a whole sequence per call (entries
// lstm, gru, rnn_tanh, rnn_relu and their *_backward). Inputs are sequence-first: x [T, N, I],
// h0 [N, P], c0 [N, H]; weights as PyTorch's modules hold them: w_ih [G*H, I], w_hh [G*H, P],
// biases [G*H] (may be undefined), w_hr [P, H] (LSTM projection, may be undefined; P = H
// without it). reverse runs the sequence from its end (the backward direction of a
// bidirectional layer); y keeps the input's time order. Gate order is PyTorch's: LSTM i, f, g, o
// and GRU r, z, n with n = tanh(W_in x + b_in + r * (W_hn h + b_hn)).
//
// The backward entries are not differentiable themselves: double backward through these ops is
// not supported (the gradients they return do not require grad).
#include <tuple>

#include "kiln/core/tensor.h"

namespace kiln {

// -> (y [T, N, P], h_T [N, P], c_T [N, H])
std::tuple<Tensor, Tensor, Tensor> lstm_layer(const Tensor& input, const Tensor& h0,
                                              const Tensor& c0, const Tensor& w_ih,
                                              const Tensor& w_hh, const Tensor& b_ih = {},
                                              const Tensor& b_hh = {}, const Tensor& w_hr = {},
                                              bool reverse = false);
// -> (y [T, N, H], h_T [N, H])
std::tuple<Tensor, Tensor> gru_layer(const Tensor& input, const Tensor& h0, const Tensor& w_ih,
                                     const Tensor& w_hh, const Tensor& b_ih = {},
                                     const Tensor& b_hh = {}, bool reverse = false);
std::tuple<Tensor, Tensor> rnn_tanh_layer(const Tensor& input, const Tensor& h0, const Tensor& w_ih,
                                          const Tensor& w_hh, const Tensor& b_ih = {},
                                          const Tensor& b_hh = {}, bool reverse = false);
std::tuple<Tensor, Tensor> rnn_relu_layer(const Tensor& input, const Tensor& h0, const Tensor& w_ih,
                                          const Tensor& w_hh, const Tensor& b_ih = {},
                                          const Tensor& b_hh = {}, bool reverse = false);

}  // namespace kiln
