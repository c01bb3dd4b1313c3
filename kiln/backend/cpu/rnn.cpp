#include "kiln/backend/cpu/rnn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kiln/backend/cpu/blas.h"
#include "kiln/backend/cpu/parallel.h"
#include "kiln/backend/cpu/vec_math.h"

namespace kiln::cpu {
namespace {

// C [m, n] = op(A) @ op(B) + beta * C on dense row-major operands; op(A) is [m, k], stored as
// [m, k] or, transposed, as [k, m] (likewise B).
template <class T>
void mm(int64_t m, int64_t n, int64_t k, const T* a, bool ta, const T* b, bool tb, T* c,
        double beta) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (beta == 0) std::fill(c, c + m * n, T(0));
    return;
  }
  GemmArgs g;
  g.dtype = std::is_same_v<T, double> ? ScalarType::Float64 : ScalarType::Float32;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = {a, 0, ta ? 1 : k, ta ? m : 1};
  g.b = {b, 0, tb ? 1 : n, tb ? k : 1};
  g.c = c;
  g.ldc = n;
  g.beta = beta;
  gemm(g);
}

template <class T>
void add_row_bias(T* m, int64_t rows, int64_t cols, const T* bias) {
  if (bias == nullptr) return;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) m[r * cols + j] += bias[j];
}

template <class T>
void column_sums(const T* m, int64_t rows, int64_t cols, T* out) {
  std::fill(out, out + cols, T(0));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) out[j] += m[r * cols + j];
}

template <class T>
T sigmoid(T v) {
  return T(1) / (T(1) + std::exp(-v));
}

// The time index processed at step s (reverse layers walk the sequence backwards).
int64_t time_of(const RnnDims& d, int64_t s) { return d.reverse ? d.T - 1 - s : s; }
// The time index whose output feeds step t's recurrence; -1 for the first step (h0).
int64_t previous_time(const RnnDims& d, int64_t t) {
  const int64_t p = d.reverse ? t + 1 : t - 1;
  return p < 0 || p >= d.T ? -1 : p;
}

// Runs f(n) for every batch row, in parallel when the rows carry enough work.
template <class F>
void for_rows(const RnnDims& d, const F& f) {
  const int64_t per_row = std::max<int64_t>(1, rnn_gates(d.cell) * d.H);
  parallel_for(0, d.N, std::max<int64_t>(1, kParallelGrain / per_row), [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) f(n);
  });
}

// gi [T*N, G*H] = x @ w_ih^T + b_ih for all steps at once.
template <class T>
std::vector<T> input_projection(const RnnDims& d, const T* x, const RnnWeights<T>& w) {
  const int64_t gh = rnn_gates(d.cell) * d.H, rows = d.T * d.N;
  std::vector<T> gi(rows * gh);
  mm(rows, gh, d.I, x, false, w.w_ih, true, gi.data(), 0);
  add_row_bias(gi.data(), rows, gh, w.b_ih);
  return gi;
}

// v[0, n) activated in place by f: float on vectors, with the eager sigmoid's and tanh's vector
// math (the last partial vector padded, so every element gets the same formula), double with
// the scalar one.
template <class VecFn, class ScalarFn>
void activate(float* v, int64_t n, VecFn f, ScalarFn) {
  int64_t j = 0;
  for (; j + kVec <= n; j += kVec) store_vec(v + j, f(load_vec(v + j)));
  if (j == n) return;
  float tail[kVec] = {};
  std::memcpy(tail, v + j, sizeof(float) * (n - j));
  store_vec(tail, f(load_vec(tail)));
  std::memcpy(v + j, tail, sizeof(float) * (n - j));
}
template <class VecFn, class ScalarFn>
void activate(double* v, int64_t n, VecFn, ScalarFn f) {
  for (int64_t j = 0; j < n; ++j) v[j] = f(v[j]);
}
template <class T>
void sigmoid_in_place(T* v, int64_t n) {
  activate(v, n, [](fvec x) { return avx2::sigmoid_vec(x); }, [](T x) { return sigmoid(x); });
}
template <class T>
void tanh_in_place(T* v, int64_t n) {
  activate(v, n, [](fvec x) { return avx2::tanh_vec(x); }, [](T x) { return std::tanh(x); });
}

// The LSTM gates of one row from pre-activations, activated in place (i, f, o sigmoid; g tanh).
template <class T>
void activate_lstm_row(T* g, int64_t h) {
  sigmoid_in_place(g, 2 * h);
  tanh_in_place(g + 2 * h, h);
  sigmoid_in_place(g + 3 * h, h);
}

}  // namespace

template <class T>
void rnn_forward(const RnnDims& d, const T* x, const T* h0, const T* c0, const RnnWeights<T>& w,
                 T* y, T* hn, T* cn) {
  const int64_t H = d.H, P = d.P, N = d.N, GH = rnn_gates(d.cell) * H;
  const bool lstm = d.cell == RnnCell::Lstm, proj = lstm && w.w_hr != nullptr;
  std::vector<T> gi = input_projection(d, x, w);
  std::vector<T> gh(N * GH), c, h;
  if (lstm) c.assign(c0, c0 + N * H);
  if (proj) h.resize(N * H);
  const T* hprev = h0;
  for (int64_t s = 0; s < d.T; ++s) {
    const int64_t t = time_of(d, s);
    mm(N, GH, P, hprev, false, w.w_hh, true, gh.data(), 0);
    add_row_bias(gh.data(), N, GH, w.b_hh);
    T* yt = y + t * N * P;
    const T* git = gi.data() + t * N * GH;
    for_rows(d, [&](int64_t n) {
      const T* a = git + n * GH;
      T* b = gh.data() + n * GH;
      switch (d.cell) {
        case RnnCell::Tanh:
        case RnnCell::Relu:
          for (int64_t j = 0; j < H; ++j) {
            const T v = a[j] + b[j];
            yt[n * H + j] = d.cell == RnnCell::Tanh ? std::tanh(v) : std::max(v, T(0));
          }
          break;
        case RnnCell::Gru:
          for (int64_t j = 0; j < H; ++j) {
            const T r = sigmoid(a[j] + b[j]), z = sigmoid(a[H + j] + b[H + j]);
            const T nn = std::tanh(a[2 * H + j] + r * b[2 * H + j]);
            yt[n * H + j] = (T(1) - z) * nn + z * hprev[n * H + j];
          }
          break;
        case RnnCell::Lstm: {
          for (int64_t j = 0; j < GH; ++j) b[j] += a[j];
          activate_lstm_row(b, H);
          T* ht = (proj ? h.data() : yt) + n * H;
          for (int64_t j = 0; j < H; ++j) {
            T& cell = c[n * H + j];
            cell = b[H + j] * cell + b[j] * b[2 * H + j];
            ht[j] = cell;
          }
          tanh_in_place(ht, H);
          for (int64_t j = 0; j < H; ++j) ht[j] *= b[3 * H + j];
          break;
        }
      }
    });
    if (proj) mm(N, P, H, h.data(), false, w.w_hr, true, yt, 0);
    hprev = yt;
  }
  std::memcpy(hn, hprev, sizeof(T) * N * P);
  if (lstm) std::memcpy(cn, c.data(), sizeof(T) * N * H);
}

template <class T>
void rnn_backward(const RnnDims& d, const T* x, const T* h0, const T* c0, const RnnWeights<T>& w,
                  const T* y, const T* gy, const T* ghn, const T* gcn, const RnnGrads<T>& out) {
  const int64_t H = d.H, P = d.P, N = d.N, GH = rnn_gates(d.cell) * H, TN = d.T * N;
  const bool lstm = d.cell == RnnCell::Lstm, gru = d.cell == RnnCell::Gru;
  const bool proj = lstm && w.w_hr != nullptr;
  // The recurrent input of every step, then all pre-activations (Note in rnn.h).
  std::vector<T> hp(TN * P);
  for (int64_t t = 0; t < d.T; ++t) {
    const int64_t p = previous_time(d, t);
    std::memcpy(hp.data() + t * N * P, p < 0 ? h0 : y + p * N * P, sizeof(T) * N * P);
  }
  std::vector<T> gi = input_projection(d, x, w);
  std::vector<T> gh(TN * GH);
  mm(TN, GH, P, hp.data(), false, w.w_hh, true, gh.data(), 0);
  add_row_bias(gh.data(), TN, GH, w.b_hh);
  // LSTM: activated gates (in gi), cell states and, with a projection, the unprojected h.
  std::vector<T> cs, hs;
  if (lstm) {
    cs.resize(TN * H);
    if (proj) hs.resize(TN * H);
    for (int64_t s = 0; s < d.T; ++s) {
      const int64_t t = time_of(d, s), p = previous_time(d, t);
      const T* cprev = p < 0 ? c0 : cs.data() + p * N * H;
      for (int64_t n = 0; n < N; ++n) {
        T* g = gi.data() + (t * N + n) * GH;
        const T* b = gh.data() + (t * N + n) * GH;
        for (int64_t j = 0; j < GH; ++j) g[j] += b[j];
        activate_lstm_row(g, H);
        for (int64_t j = 0; j < H; ++j) {
          const int64_t e = (t * N + n) * H + j;
          cs[e] = g[H + j] * cprev[n * H + j] + g[j] * g[2 * H + j];
          if (proj) hs[e] = g[3 * H + j] * std::tanh(cs[e]);
        }
      }
    }
  }
  std::vector<T> dgi(TN * GH), dgh_store(gru ? TN * GH : 0);
  std::vector<T>& dgh = gru ? dgh_store : dgi;
  std::vector<T> dh(N * P, T(0)), dc(lstm ? N * H : 0, T(0)), dhh(proj ? N * H : 0);
  if (ghn) std::copy(ghn, ghn + N * P, dh.begin());
  if (lstm && gcn) std::copy(gcn, gcn + N * H, dc.begin());
  if (proj && out.w_hr) std::fill(out.w_hr, out.w_hr + P * H, T(0));
  for (int64_t s = d.T - 1; s >= 0; --s) {
    const int64_t t = time_of(d, s), p = previous_time(d, t);
    if (gy)
      for (int64_t e = 0; e < N * P; ++e) dh[e] += gy[t * N * P + e];
    if (proj) {
      if (out.w_hr) mm(P, H, N, dh.data(), true, hs.data() + t * N * H, false, out.w_hr, 1);
      mm(N, H, P, dh.data(), false, w.w_hr, false, dhh.data(), 0);
    }
    T* dpre = dgi.data() + t * N * GH;
    T* dpre_h = dgh.data() + t * N * GH;
    for_rows(d, [&](int64_t n) {
      T* dg = dpre + n * GH;
      switch (d.cell) {
        case RnnCell::Tanh:
        case RnnCell::Relu:
          for (int64_t j = 0; j < H; ++j) {
            const T h = y[(t * N + n) * H + j], g = dh[n * H + j];
            dg[j] = d.cell == RnnCell::Tanh ? g * (T(1) - h * h) : (h > T(0) ? g : T(0));
          }
          break;
        case RnnCell::Gru: {
          const T* a = gi.data() + (t * N + n) * GH;
          const T* b = gh.data() + (t * N + n) * GH;
          T* dgh_row = dpre_h + n * GH;
          for (int64_t j = 0; j < H; ++j) {
            const T r = sigmoid(a[j] + b[j]), z = sigmoid(a[H + j] + b[H + j]);
            const T nn = std::tanh(a[2 * H + j] + r * b[2 * H + j]);
            T& g = dh[n * H + j];
            const T dan = g * (T(1) - z) * (T(1) - nn * nn);
            const T dz = g * (hp[(t * N + n) * H + j] - nn);
            dg[j] = dgh_row[j] = dan * b[2 * H + j] * r * (T(1) - r);
            dg[H + j] = dgh_row[H + j] = dz * z * (T(1) - z);
            dg[2 * H + j] = dan;
            dgh_row[2 * H + j] = dan * r;
            g *= z;  // the direct path h_prev -> h
          }
          break;
        }
        case RnnCell::Lstm: {
          const T* g = gi.data() + (t * N + n) * GH;
          const T* dhv = proj ? dhh.data() : dh.data();
          for (int64_t j = 0; j < H; ++j) {
            const T i = g[j], f = g[H + j], gg = g[2 * H + j], o = g[3 * H + j];
            const T tc = std::tanh(cs[(t * N + n) * H + j]);
            const T cprev = p < 0 ? c0[n * H + j] : cs[(p * N + n) * H + j];
            const T dhj = dhv[n * H + j];
            const T dcv = dc[n * H + j] + dhj * o * (T(1) - tc * tc);
            dg[j] = dcv * gg * i * (T(1) - i);
            dg[H + j] = dcv * cprev * f * (T(1) - f);
            dg[2 * H + j] = dcv * i * (T(1) - gg * gg);
            dg[3 * H + j] = dhj * tc * o * (T(1) - o);
            dc[n * H + j] = dcv * f;
          }
          break;
        }
      }
    });
    mm(N, P, GH, dpre_h, false, w.w_hh, false, dh.data(), gru ? 1 : 0);
  }
  if (out.h0) std::copy(dh.begin(), dh.end(), out.h0);
  if (lstm && out.c0) std::copy(dc.begin(), dc.end(), out.c0);
  if (out.x) mm(TN, d.I, GH, dgi.data(), false, w.w_ih, false, out.x, 0);
  if (out.w_ih) mm(GH, d.I, TN, dgi.data(), true, x, false, out.w_ih, 0);
  if (out.w_hh) mm(GH, P, TN, dgh.data(), true, hp.data(), false, out.w_hh, 0);
  if (out.b_ih) column_sums(dgi.data(), TN, GH, out.b_ih);
  if (out.b_hh) column_sums(dgh.data(), TN, GH, out.b_hh);
}

#define KILN_RNN_INSTANTIATE(T)                                                                    \
  template void rnn_forward<T>(const RnnDims&, const T*, const T*, const T*, const RnnWeights<T>&, \
                               T*, T*, T*);                                                        \
  template void rnn_backward<T>(const RnnDims&, const T*, const T*, const T*,                      \
                                const RnnWeights<T>&, const T*, const T*, const T*, const T*,      \
                                const RnnGrads<T>&);
KILN_RNN_INSTANTIATE(float)
KILN_RNN_INSTANTIATE(double)
#undef KILN_RNN_INSTANTIATE

}  // namespace kiln::cpu
