// Samples and float64 references of the recurrent entries. The reference is a naive loop over
// steps, batch rows and gate units with explicit dot products, written independently of the
// GEMM-based kernel in kiln/backend/cpu/rnn.cpp.
#include <cmath>

#include "kiln/core/dispatch.h"
#include "kiln/ops/nn/util.h"
#include "kiln/ops/rnn/util.h"
#include "kiln/ops/samples.h"

namespace kiln::rnn_util {
namespace {

using cpu::RnnCell;

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

std::vector<double> values_or_zeros(const Tensor& t, size_t n) {
  return t.defined() ? nn_util::to_doubles(t) : std::vector<double>(n, 0.0);
}

// W [rows, cols] times v (cols values starting at v0), plus b: rows values.
std::vector<double> affine(const std::vector<double>& w, const std::vector<double>& v, size_t v0,
                           const std::vector<double>& b, int64_t rows, int64_t cols) {
  std::vector<double> r(rows);
  for (int64_t k = 0; k < rows; ++k) {
    double s = b[k];
    for (int64_t j = 0; j < cols; ++j) s += w[k * cols + j] * v[v0 + j];
    r[k] = s;
  }
  return r;
}

}  // namespace

std::vector<Tensor> reference(RnnCell cell, const std::vector<Tensor>& in, bool reverse) {
  const Operands o = operands(cell, in);
  const int64_t T = o.x.sym_size(0).guard_int(), N = o.x.sym_size(1).guard_int();
  const int64_t I = o.x.sym_size(2).guard_int(), G = cpu::rnn_gates(cell);
  const int64_t H = o.w_ih.sym_size(0).guard_int() / G;
  const int64_t P = o.w_hr.defined() ? o.w_hr.sym_size(0).guard_int() : H;
  const std::vector<double> x = nn_util::to_doubles(o.x), w_ih = nn_util::to_doubles(o.w_ih),
                            w_hh = nn_util::to_doubles(o.w_hh);
  const std::vector<double> b_ih = values_or_zeros(o.b_ih, G * H),
                            b_hh = values_or_zeros(o.b_hh, G * H),
                            w_hr = values_or_zeros(o.w_hr, 0);
  std::vector<double> h = nn_util::to_doubles(o.h0), c = values_or_zeros(o.c0, N * H);
  std::vector<double> y(T * N * P);
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = reverse ? T - 1 - s : s;
    std::vector<double> h_next(N * P);
    for (int64_t n = 0; n < N; ++n) {
      const std::vector<double> a = affine(w_ih, x, (t * N + n) * I, b_ih, G * H, I);
      const std::vector<double> b = affine(w_hh, h, n * P, b_hh, G * H, P);
      std::vector<double> hn(H);
      for (int64_t j = 0; j < H; ++j) {
        if (cell == RnnCell::Tanh) {
          hn[j] = std::tanh(a[j] + b[j]);
        } else if (cell == RnnCell::Relu) {
          hn[j] = std::max(0.0, a[j] + b[j]);
        } else if (cell == RnnCell::Gru) {
          const double r = sigmoid(a[j] + b[j]), z = sigmoid(a[H + j] + b[H + j]);
          const double cand = std::tanh(a[2 * H + j] + r * b[2 * H + j]);
          hn[j] = (1 - z) * cand + z * h[n * P + j];
        } else {
          const double i = sigmoid(a[j] + b[j]), f = sigmoid(a[H + j] + b[H + j]);
          const double g = std::tanh(a[2 * H + j] + b[2 * H + j]);
          const double og = sigmoid(a[3 * H + j] + b[3 * H + j]);
          c[n * H + j] = f * c[n * H + j] + i * g;
          hn[j] = og * std::tanh(c[n * H + j]);
        }
      }
      for (int64_t p = 0; p < P; ++p) {
        double v = 0;
        if (!o.w_hr.defined()) v = hn[p];
        for (int64_t j = 0; o.w_hr.defined() && j < H; ++j) v += w_hr[p * H + j] * hn[j];
        h_next[n * P + p] = v;
        y[(t * N + n) * P + p] = v;
      }
    }
    h = h_next;
  }
  std::vector<Tensor> out{nn_util::from_doubles(y, {T, N, P}), nn_util::from_doubles(h, {N, P})};
  if (is_lstm(cell)) out.push_back(nn_util::from_doubles(c, {N, H}));
  return out;
}

namespace {

struct SampleSpec {
  int64_t T, N, I, H, P;
  bool bias, reverse, noncontiguous;
  const char* desc;
};

OpSample make_forward(RnnCell cell, ScalarType dt, const SampleSpec& s) {
  const int64_t G = cpu::rnn_gates(cell);
  const bool proj = s.P != s.H;
  auto mk = [&](std::vector<int64_t> shape, double bound = 0.5) {
    return samples::make(std::move(shape), dt, -bound, bound);
  };
  Operands o;
  o.x =
      s.noncontiguous ? samples::make({s.T, s.N, s.I}, dt, -1, 1, true) : mk({s.T, s.N, s.I}, 1.0);
  o.h0 = mk({s.N, s.P});
  if (is_lstm(cell)) o.c0 = mk({s.N, s.H});
  // Non-contiguous: w_ih as a transposed view.
  o.w_ih = s.noncontiguous ? mk({s.I, G * s.H}).t() : mk({G * s.H, s.I});
  o.w_hh = mk({G * s.H, s.P});
  if (s.bias) {
    o.b_ih = mk({G * s.H});
    o.b_hh = mk({G * s.H});
  }
  if (proj) o.w_hr = mk({s.P, s.H});
  return {to_inputs(cell, o), {s.reverse}, s.desc};
}

std::vector<SampleSpec> sample_specs(RnnCell cell) {
  std::vector<SampleSpec> specs{
      {3, 2, 3, 4, 4, true, false, false, "T=3 N=2 I=3 H=4"},
      {3, 2, 3, 4, 4, true, true, false, "reverse"},
      {2, 3, 2, 3, 3, false, false, false, "no bias"},
      {3, 2, 3, 4, 4, true, false, true, "non-contiguous input and w_ih"},
      {0, 2, 3, 4, 4, true, false, false, "empty sequence"},
      {4, 1, 1, 2, 2, true, true, false, "batch 1, reverse"},
  };
  if (is_lstm(cell)) {
    specs.push_back({3, 2, 3, 4, 2, true, false, false, "proj_size 2"});
    specs.push_back({3, 2, 3, 4, 3, false, true, false, "proj_size 3, reverse, no bias"});
  }
  return specs;
}

}  // namespace

std::vector<OpSample> forward_samples(RnnCell cell, ScalarType dtype) {
  std::vector<OpSample> out;
  for (const SampleSpec& s : sample_specs(cell)) out.push_back(make_forward(cell, dtype, s));
  return out;
}

// Gradients for every forward output (some left undefined, as autograd may pass), the forward
// inputs, then the forward output y computed by the forward entry.
std::vector<OpSample> backward_samples(RnnCell cell, ScalarType dtype) {
  std::vector<OpSample> out;
  const OpDef& forward = get_op(op_name(cell));
  int k = 0;
  for (const SampleSpec& s : sample_specs(cell)) {
    OpSample f = make_forward(cell, dtype, s);
    const std::vector<Tensor> y = call_op(forward, f.inputs, f.attrs);
    std::vector<Tensor> in;
    for (size_t i = 0; i < y.size(); ++i) {
      const bool skip = (k + static_cast<int>(i)) % 4 == 3;  // a few absent gradients
      in.push_back(skip ? Tensor() : samples::make(nn_util::concrete_sizes(y[i]), dtype, -1, 1));
    }
    in.insert(in.end(), f.inputs.begin(), f.inputs.end());
    in.push_back(y[0]);
    out.push_back({std::move(in), f.attrs, f.desc, false});
    ++k;
  }
  return out;
}

}  // namespace kiln::rnn_util
