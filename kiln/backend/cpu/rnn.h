#pragma once
// One layer, one direction of a recurrent network over a whole sequence (Elman tanh/relu, GRU,
// LSTM with optional projection), forward and backward through time. Gate order and equations
// are PyTorch's. Operands are dense row-major float or double; the input projection of all steps
// is one GEMM, each step adds one GEMM with the recurrent weight and one fused gate loop.
//
// Note [RNN backward recomputes the gates]: the forward keeps nothing but its outputs. The
// backward rebuilds the previous hidden state of every step from y and h0, so the pre-activations
// of all steps come from two GEMMs (input and recurrent part), and the LSTM cell states from one
// pointwise scan. This keeps the op's outputs exactly PyTorch's (no workspace output that
// autograd would have to differentiate) at the price of one cheap pointwise pass.
#include <cstdint>

namespace kiln::cpu {

enum class RnnCell { Tanh, Relu, Gru, Lstm };

// Number of gate blocks stacked in w_ih / w_hh: 1, 1, 3 (r, z, n) or 4 (i, f, g, o).
inline int64_t rnn_gates(RnnCell cell) {
  return cell == RnnCell::Lstm ? 4 : cell == RnnCell::Gru ? 3 : 1;
}

// Sizes of one layer: steps T, batch N, input I, hidden H, output/recurrent size P (the
// projection size for LSTM with w_hr, otherwise H).
struct RnnDims {
  RnnCell cell = RnnCell::Tanh;
  int64_t T = 0, N = 0, I = 0, H = 0, P = 0;
  bool reverse = false;
};

// Weights and optional parts (null when absent): w_ih [G*H, I], w_hh [G*H, P], biases [G*H],
// w_hr [P, H].
template <class T>
struct RnnWeights {
  const T* w_ih = nullptr;
  const T* w_hh = nullptr;
  const T* b_ih = nullptr;
  const T* b_hh = nullptr;
  const T* w_hr = nullptr;
};

// x [T, N, I], h0 [N, P], c0 [N, H] (LSTM) -> y [T, N, P], hn [N, P], cn [N, H] (LSTM).
template <class T>
void rnn_forward(const RnnDims& d, const T* x, const T* h0, const T* c0, const RnnWeights<T>& w,
                 T* y, T* hn, T* cn);

// Gradients flowing in (null = zero): gy [T, N, P], ghn [N, P], gcn [N, H]. Every gradient out
// is written in full (null ones are skipped): gx, gh0, gc0, gw_ih, gw_hh, gb_ih, gb_hh, gw_hr.
template <class T>
struct RnnGrads {
  T* x = nullptr;
  T* h0 = nullptr;
  T* c0 = nullptr;
  T* w_ih = nullptr;
  T* w_hh = nullptr;
  T* b_ih = nullptr;
  T* b_hh = nullptr;
  T* w_hr = nullptr;
};
template <class T>
void rnn_backward(const RnnDims& d, const T* x, const T* h0, const T* c0, const RnnWeights<T>& w,
                  const T* y, const T* gy, const T* ghn, const T* gcn, const RnnGrads<T>& out);

}  // namespace kiln::cpu
