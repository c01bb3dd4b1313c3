#pragma once
// CUDA kernels of the recurrent entries lstm, gru, rnn_tanh, rnn_relu and their *_backward (one
// layer, one direction, a whole sequence): the CPU kernel's algorithm (kiln/backend/cpu/rnn.cpp,
// gate order and equations PyTorch's) on device tensors. The products are Kiln ops (mm and addmm,
// on cuBLAS): the input projection of all steps is one GEMM, each step adds one GEMM with the
// recurrent weight and one generated kernel for the gate arithmetic of all its units. The
// backward recomputes what the CPU backward recomputes (Note [RNN backward recomputes the gates]
// in kiln/backend/cpu/rnn.h).
#include <string>

#include "kiln/backend/cpu/rnn.h"
#include "kiln/core/dtype.h"

namespace kiln::cuda {

// The generated kernels, one thread per unit (batch row n, hidden unit j) in a grid-stride loop.
// T is the dtype's storage type (float32 and float64 only), arithmetic in T as on the CPU.
// Pre-activations gi (the input part, with b_ih) and gh (the recurrent part, with b_hh) are
// [rows, G*H] rows of gate blocks; every other operand is [rows, H] (P == H where it is read).
//
// Step:         (const T* gi, const T* gh, const T* hprev, T* c, T* h, int64_t rows,
//                int64_t hidden)
//   h = the cell's output (before any projection); c: the LSTM cell state, updated in place;
//   hprev: read by the GRU.
// StepBackward: (const T* gates, const T* gh, const T* state, const T* prev, const T* gy, T* dh,
//                T* dc, T* dgi, T* dgh, int64_t rows, int64_t hidden)
//   The gradient reaching h is dh + gy (gy may be null). Tanh/Relu: state = the step's output,
//   writes dgi. GRU: gates = gi, gh and prev = hprev as in the forward, writes dgi, dgh and
//   dh *= z (the direct path to the previous state). LSTM: gates = the activated gates, state =
//   the cell state, prev = the previous cell state, writes dgi and updates dc in place.
// LstmScan:     (T* gates, const T* gh, const T* c0, T* cs, T* hs, int64_t steps, int64_t rows,
//                int64_t hidden, int reverse)
//   Over [steps * rows] rows in time order: activates gates (holding gi) in place with gh, and
//   writes the cell states cs and, when hs is not null, the unprojected outputs.
enum class RnnKernel { Step, StepBackward, LstmScan };
std::string rnn_source(RnnKernel kind, cpu::RnnCell cell, ScalarType dtype,
                       const std::string& name);

// Sets the CUDA kernels of lstm, gru, rnn_tanh, rnn_relu and their backward entries.
void register_rnn_kernels();

}  // namespace kiln::cuda
