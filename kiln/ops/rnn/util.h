#pragma once
// The operand layout shared by the recurrent entries (rnn.cpp), their samples and float64
// references (rnn_reference.cpp). Forward inputs: x, h0, [c0], w_ih, w_hh, b_ih, b_hh, [w_hr]
// (bracketed ones for LSTM only); the backward entries take the forward outputs' gradients first,
// then the forward inputs, then the forward output y.
#include <vector>

#include "kiln/backend/cpu/rnn.h"
#include "kiln/ops/registry.h"

namespace kiln::rnn_util {

struct Operands {
  Tensor x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr;
};

inline bool is_lstm(cpu::RnnCell cell) { return cell == cpu::RnnCell::Lstm; }
inline size_t num_inputs(cpu::RnnCell cell) { return is_lstm(cell) ? 8 : 6; }
inline size_t num_outputs(cpu::RnnCell cell) { return is_lstm(cell) ? 3 : 2; }

inline const char* op_name(cpu::RnnCell cell) {
  switch (cell) {
    case cpu::RnnCell::Tanh:
      return "rnn_tanh";
    case cpu::RnnCell::Relu:
      return "rnn_relu";
    case cpu::RnnCell::Gru:
      return "gru";
    case cpu::RnnCell::Lstm:
      break;
  }
  return "lstm";
}

// The forward operands starting at in[offset].
inline Operands operands(cpu::RnnCell cell, const std::vector<Tensor>& in, size_t offset = 0) {
  const Tensor* p = in.data() + offset;
  if (is_lstm(cell)) return {p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]};
  return {p[0], p[1], Tensor(), p[2], p[3], p[4], p[5], Tensor()};
}

// The forward operands back in input order.
inline std::vector<Tensor> to_inputs(cpu::RnnCell cell, const Operands& o) {
  if (is_lstm(cell)) return {o.x, o.h0, o.c0, o.w_ih, o.w_hh, o.b_ih, o.b_hh, o.w_hr};
  return {o.x, o.h0, o.w_ih, o.w_hh, o.b_ih, o.b_hh};
}

// Float64 reference of the forward entry: a naive step loop (rnn_reference.cpp).
std::vector<Tensor> reference(cpu::RnnCell cell, const std::vector<Tensor>& in, bool reverse);
// Samples of the forward and backward entries (rnn_reference.cpp).
std::vector<OpSample> forward_samples(cpu::RnnCell cell, ScalarType dtype);
std::vector<OpSample> backward_samples(cpu::RnnCell cell, ScalarType dtype);

}  // namespace kiln::rnn_util
