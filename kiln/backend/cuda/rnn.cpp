#include "kiln/backend/cuda/rnn.h"

#include "kiln/backend/cuda/device_assert.h"
#include "kiln/backend/cuda/generated_kernels.h"
#include "kiln/backend/cuda/op_util.h"
#include "kiln/compile/codegen/c_types.h"
#include "kiln/core/error.h"
#include "kiln/core/grad_mode.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/registry.h"
#include "kiln/ops/rnn/util.h"

namespace kiln::cuda {
namespace {

using cpu::RnnCell;

constexpr unsigned kThreads = 256;

constexpr const char* kCommon = R"cuda(
__device__ inline T sigmoid(T v) { return T(1) / (T(1) + std::exp(-v)); }

// The gradient reaching a step's output: the one carried from later steps plus the output's own.
__device__ inline T incoming(const T* dh, const T* gy, int64_t e) {
  return gy ? dh[e] + gy[e] : dh[e];
}

// f(n, j) for every hidden unit j of every batch row n.
template <class F>
__device__ inline void for_each_unit(int64_t rows, int64_t hidden, F f) {
  const int64_t total = rows * hidden, stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += stride)
    f(e / hidden, e % hidden);
}
)cuda";

// ---- Elman cells: h = activate(gi + gh) ----
constexpr const char* kTanh = R"cuda(
__device__ inline T activate(T v) { return std::tanh(v); }
// The pre-activation's gradient from the output's gradient g and the output h.
__device__ inline T activate_grad(T g, T h) { return g * (T(1) - h * h); }
)cuda";

constexpr const char* kRelu = R"cuda(
__device__ inline T activate(T v) { return v < T(0) ? T(0) : v; }
__device__ inline T activate_grad(T g, T h) { return h > T(0) ? g : T(0); }
)cuda";

constexpr const char* kElmanStep = R"cuda(
extern "C" __global__ void KERNEL(const T* gi, const T* gh, const T* hprev, T* c, T* h,
                                  int64_t rows, int64_t hidden) {
  for_each_unit(rows, hidden, [&](int64_t n, int64_t j) {
    const int64_t e = n * hidden + j;
    h[e] = activate(gi[e] + gh[e]);
  });
}
)cuda";

constexpr const char* kElmanStepBackward = R"cuda(
extern "C" __global__ void KERNEL(const T* gates, const T* gh, const T* y, const T* prev,
                                  const T* gy, T* dh, T* dc, T* dgi, T* dgh, int64_t rows,
                                  int64_t hidden) {
  for_each_unit(rows, hidden, [&](int64_t n, int64_t j) {
    const int64_t e = n * hidden + j;
    dgi[e] = activate_grad(incoming(dh, gy, e), y[e]);
  });
}
)cuda";

// ---- GRU: r, z, n with b_hn inside r * (...) ----
constexpr const char* kGruGates = R"cuda(
struct GruGates {
  T r, z, n;
};
// Unit j's gates from the input part a and the recurrent part b of one row.
__device__ inline GruGates gru_gates(const T* a, const T* b, int64_t h, int64_t j) {
  const T r = sigmoid(a[j] + b[j]), z = sigmoid(a[h + j] + b[h + j]);
  return {r, z, std::tanh(a[2 * h + j] + r * b[2 * h + j])};
}
)cuda";

constexpr const char* kGruStep = R"cuda(
extern "C" __global__ void KERNEL(const T* gi, const T* gh, const T* hprev, T* c, T* h,
                                  int64_t rows, int64_t hidden) {
  for_each_unit(rows, hidden, [&](int64_t n, int64_t j) {
    const GruGates v = gru_gates(gi + n * 3 * hidden, gh + n * 3 * hidden, hidden, j);
    const int64_t e = n * hidden + j;
    h[e] = (T(1) - v.z) * v.n + v.z * hprev[e];
  });
}
)cuda";

constexpr const char* kGruStepBackward = R"cuda(
extern "C" __global__ void KERNEL(const T* gi, const T* gh, const T* state, const T* hprev,
                                  const T* gy, T* dh, T* dc, T* dgi, T* dgh, int64_t rows,
                                  int64_t hidden) {
  const int64_t h = hidden;
  for_each_unit(rows, h, [&](int64_t n, int64_t j) {
    const T* b = gh + n * 3 * h;
    const GruGates v = gru_gates(gi + n * 3 * h, b, h, j);
    const int64_t e = n * h + j;
    const T g = incoming(dh, gy, e);
    const T dan = g * (T(1) - v.z) * (T(1) - v.n * v.n);
    const T dz = g * (hprev[e] - v.n);
    T* di = dgi + n * 3 * h;
    T* dr = dgh + n * 3 * h;
    di[j] = dr[j] = dan * b[2 * h + j] * v.r * (T(1) - v.r);
    di[h + j] = dr[h + j] = dz * v.z * (T(1) - v.z);
    di[2 * h + j] = dan;
    dr[2 * h + j] = dan * v.r;
    dh[e] = g * v.z;
  });
}
)cuda";

// ---- LSTM: i, f, g, o ----
constexpr const char* kLstmGates = R"cuda(
struct LstmGates {
  T i, f, g, o;
};
// Unit j's activated gates from the recurrent part b plus the input part a of one row.
__device__ inline LstmGates lstm_gates(const T* a, const T* b, int64_t h, int64_t j) {
  return {sigmoid(b[j] + a[j]), sigmoid(b[h + j] + a[h + j]),
          std::tanh(b[2 * h + j] + a[2 * h + j]), sigmoid(b[3 * h + j] + a[3 * h + j])};
}
)cuda";

constexpr const char* kLstmStep = R"cuda(
extern "C" __global__ void KERNEL(const T* gi, const T* gh, const T* hprev, T* c, T* h,
                                  int64_t rows, int64_t hidden) {
  for_each_unit(rows, hidden, [&](int64_t n, int64_t j) {
    const LstmGates v = lstm_gates(gi + n * 4 * hidden, gh + n * 4 * hidden, hidden, j);
    const int64_t e = n * hidden + j;
    c[e] = v.f * c[e] + v.i * v.g;
    h[e] = v.o * std::tanh(c[e]);
  });
}
)cuda";

constexpr const char* kLstmStepBackward = R"cuda(
extern "C" __global__ void KERNEL(const T* gates, const T* gh, const T* cs, const T* cprev,
                                  const T* gy, T* dh, T* dc, T* dgi, T* dgh, int64_t rows,
                                  int64_t hidden) {
  const int64_t h = hidden;
  for_each_unit(rows, h, [&](int64_t n, int64_t j) {
    const T* g = gates + n * 4 * h;
    const T i = g[j], f = g[h + j], gg = g[2 * h + j], o = g[3 * h + j];
    const int64_t e = n * h + j;
    const T tc = std::tanh(cs[e]);
    const T dhj = incoming(dh, gy, e);
    const T dcv = dc[e] + dhj * o * (T(1) - tc * tc);
    T* d = dgi + n * 4 * h;
    d[j] = dcv * gg * i * (T(1) - i);
    d[h + j] = dcv * cprev[e] * f * (T(1) - f);
    d[2 * h + j] = dcv * i * (T(1) - gg * gg);
    d[3 * h + j] = dhj * tc * o * (T(1) - o);
    dc[e] = dcv * f;
  });
}
)cuda";

// One thread per unit walks the sequence: the cell state is a scan over steps, and every other
// value of a step is the unit's own.
constexpr const char* kLstmScan = R"cuda(
extern "C" __global__ void KERNEL(T* gates, const T* gh, const T* c0, T* cs, T* hs,
                                  int64_t steps, int64_t rows, int64_t hidden, int reverse) {
  const int64_t h = hidden;
  for_each_unit(rows, h, [&](int64_t n, int64_t j) {
    T c = c0[n * h + j];
    for (int64_t s = 0; s < steps; ++s) {
      const int64_t row = (reverse ? steps - 1 - s : s) * rows + n;
      T* g = gates + row * 4 * h;
      const LstmGates v = lstm_gates(g, gh + row * 4 * h, h, j);
      g[j] = v.i;
      g[h + j] = v.f;
      g[2 * h + j] = v.g;
      g[3 * h + j] = v.o;
      c = v.f * c + v.i * v.g;
      cs[row * h + j] = c;
      if (hs) hs[row * h + j] = v.o * std::tanh(c);
    }
  });
}
)cuda";

struct CellSource {
  const char* helpers;
  const char* step;
  const char* step_backward;
};

CellSource cell_source(RnnCell cell) {
  switch (cell) {
    case RnnCell::Tanh:
      return {kTanh, kElmanStep, kElmanStepBackward};
    case RnnCell::Relu:
      return {kRelu, kElmanStep, kElmanStepBackward};
    case RnnCell::Gru:
      return {kGruGates, kGruStep, kGruStepBackward};
    case RnnCell::Lstm:
      break;
  }
  return {kLstmGates, kLstmStep, kLstmStepBackward};
}

const char* kind_name(RnnKernel kind) {
  switch (kind) {
    case RnnKernel::Step:
      return "step";
    case RnnKernel::StepBackward:
      return "step_backward";
    case RnnKernel::LstmScan:
      break;
  }
  return "scan";
}

bool is_supported(ScalarType dt) { return dt == kFloat32 || dt == kFloat64; }

// ---- host side ----

// One call's operands and sizes. x is [T * N, I] (the rows of every step); the GEMMs take the
// weights in any layout, the kernels read only the dense tensors below and GEMM results.
struct Layer {
  RnnCell cell = RnnCell::Tanh;
  bool reverse = false;
  int64_t T = 0, N = 0, I = 0, H = 0, P = 0;
  Tensor x, h0, c0;  // h0, c0 contiguous
  Tensor w_ih, w_hh, b_ih, b_hh, w_hr;

  bool lstm() const { return cell == RnnCell::Lstm; }
  bool gru() const { return cell == RnnCell::Gru; }
  bool projected() const { return w_hr.defined(); }
  // The time index processed at step s; the one whose output feeds step t (-1: h0).
  int64_t time_of(int64_t s) const { return reverse ? T - 1 - s : s; }
  int64_t previous_time(int64_t t) const {
    const int64_t p = reverse ? t + 1 : t - 1;
    return p < 0 || p >= T ? -1 : p;
  }
  // Time t's rows of a [T * N, ...] matrix.
  Tensor rows_at(const Tensor& m, int64_t t) const { return m.narrow(0, t * N, N); }
};

Tensor contiguous_or_undefined(const Tensor& t) { return t.defined() ? t.contiguous() : t; }

Layer layer_of(RnnCell cell, const rnn_util::Operands& o, bool reverse) {
  Layer l;
  l.cell = cell;
  l.reverse = reverse;
  l.T = o.x.size(0);
  l.N = o.x.size(1);
  l.I = o.x.size(2);
  l.H = o.w_ih.size(0) / cpu::rnn_gates(cell);
  l.P = o.w_hr.defined() ? o.w_hr.size(0) : l.H;
  l.x = o.x.reshape({l.T * l.N, l.I});
  l.h0 = o.h0.contiguous();
  l.c0 = contiguous_or_undefined(o.c0);
  l.w_ih = o.w_ih;
  l.w_hh = o.w_hh;
  l.b_ih = o.b_ih;
  l.b_hh = o.b_hh;
  l.w_hr = o.w_hr;
  return l;
}

// Whether the call runs here: float32 or float64 operands, all on the outputs' device.
bool runs_natively(const std::vector<Tensor>& in, const std::vector<Tensor>& out) {
  const ScalarType dt = out[0].dtype();
  if (!is_supported(dt) || !on_device(in, device_of(out[0]))) return false;
  for (const Tensor& t : in)
    if (t.defined() && t.dtype() != dt) return false;
  return true;
}

// m @ w^T (+ b): the affine map of every row of m.
Tensor affine(const Tensor& m, const Tensor& w, const Tensor& b) {
  return b.defined() ? addmm(b, m, w.t()) : mm(m, w.t());
}

void* ptr(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

// Launches the cell's `kind` kernel over rows x hidden units, for `op`, on the device and in the
// dtype of `like`.
void launch(const std::string& op, RnnKernel kind, RnnCell cell, const Tensor& like, int64_t rows,
            int64_t hidden, void** params) {
  if (rows == 0 || hidden == 0) return;
  const int dev = device_of(like);
  const ScalarType dt = like.dtype();
  const std::string name = std::string("kiln_") + rnn_util::op_name(cell) + "_" + kind_name(kind) +
                           "_" + std::string(dtype_name(dt));
  const cudaKernel_t fn =
      generated_kernel(dev, name, [&] { return rnn_source(kind, cell, dt, name); });
  launch_kernel(op, fn, grid_stride_blocks(dev, rows * hidden, kThreads), dim3(kThreads), params);
}

// A contiguous result with out's sizes and options: out itself when it already is one.
Tensor dense_result(const Tensor& out) {
  return out.is_contiguous() ? out : empty(out.sizes(), out.options());
}

void store(const Tensor& out, const Tensor& computed) {
  if (!computed.is_same(out)) out.copy_(computed);
}

void forward(RnnCell cell, const std::vector<Tensor>& in, std::vector<Tensor>& out,
             const Attrs& a) {
  const OpDef& op = get_op(rnn_util::op_name(cell));
  if (!runs_natively(in, out)) return cpu_fallback(op, in, out, a);
  NoGradGuard no_grad;
  const Layer l = layer_of(cell, rnn_util::operands(cell, in), a.b(0));
  const Tensor gi = affine(l.x, l.w_ih, l.b_ih);
  const Tensor y = dense_result(out[0]);
  const Tensor c = l.lstm() ? l.c0.clone() : Tensor();
  const Tensor h = l.projected() ? empty({l.N, l.H}, y.options()) : Tensor();
  Tensor hprev = l.h0;
  for (int64_t s = 0; s < l.T; ++s) {
    const int64_t t = l.time_of(s);
    const Tensor yt = y.select(0, t);
    const Tensor git = l.rows_at(gi, t), gh = affine(hprev, l.w_hh, l.b_hh);
    void *gip = git.data_ptr(), *ghp = gh.data_ptr(), *hprevp = hprev.data_ptr(), *cp = ptr(c),
         *outp = l.projected() ? h.data_ptr() : yt.data_ptr();
    int64_t rows = l.N, hidden = l.H;
    void* params[] = {&gip, &ghp, &hprevp, &cp, &outp, &rows, &hidden};
    launch(op.name, RnnKernel::Step, cell, y, rows, hidden, params);
    if (l.projected()) yt.copy_(mm(h, l.w_hr.t()));
    hprev = yt;
  }
  store(out[0], y);
  out[1].copy_(hprev);
  if (l.lstm()) out[2].copy_(c);
}

// ---- backward ----

// The recurrent input of every step, in time order: [T, N, P].
Tensor previous_outputs(const Layer& l, const Tensor& y) {
  if (l.T == 0) return y;
  const Tensor first = l.h0.unsqueeze(0), rest = y.narrow(0, l.reverse ? 1 : 0, l.T - 1);
  return l.reverse ? cat({rest, first}) : cat({first, rest});
}

// The gradient flowing into a final state as a fresh buffer the backward updates in place.
Tensor carried(const Tensor& grad, int64_t rows, int64_t cols, const TensorOptions& options) {
  if (!grad.defined()) return zeros({rows, cols}, options);
  Tensor t = empty({rows, cols}, options);
  t.copy_(grad);
  return t;
}

// What the forward kept nothing of, rebuilt from y and h0 (the Note in kiln/backend/cpu/rnn.h):
// hp [T * N, P] the recurrent inputs, gi and gh [T * N, G * H] the pre-activations (for the
// LSTM, gi then holds the activated gates), and the LSTM's cell states cs and, with a
// projection, unprojected outputs hs [T * N, H].
struct Recomputed {
  Tensor hp, gi, gh, cs, hs;
};

Recomputed recompute(const std::string& op, const Layer& l, const Tensor& y) {
  Recomputed r;
  r.hp = previous_outputs(l, y).reshape({l.T * l.N, l.P});
  r.gi = affine(l.x, l.w_ih, l.b_ih);
  r.gh = affine(r.hp, l.w_hh, l.b_hh);
  if (!l.lstm()) return r;
  r.cs = empty({l.T * l.N, l.H}, y.options());
  if (l.projected()) r.hs = empty({l.T * l.N, l.H}, y.options());
  void *gp = r.gi.data_ptr(), *ghp = r.gh.data_ptr(), *c0 = l.c0.data_ptr(), *csp = r.cs.data_ptr(),
       *hsp = ptr(r.hs);
  int64_t steps = l.T, rows = l.N, hidden = l.H;
  int reverse = l.reverse ? 1 : 0;
  void* params[] = {&gp, &ghp, &c0, &csp, &hsp, &steps, &rows, &hidden, &reverse};
  launch(op, RnnKernel::LstmScan, l.cell, y, rows, hidden, params);
  return r;
}

// The gradients of every step's pre-activations (dgh: of the recurrent part, the GRU's own, else
// dgi itself), of the initial states, and with a projection of every step's output [T * N, P].
struct StepGrads {
  Tensor dgi, dgh, dh, dc, dy;
};

// Backpropagation through time: the steps in reverse processing order, one kernel and one or two
// GEMMs each.
StepGrads through_time(const std::string& op, const Layer& l, const Recomputed& r, const Tensor& y,
                       const Tensor& gy, const Tensor& ghn, const Tensor& gcn) {
  const TensorOptions options = y.options();
  const int64_t rows = l.T * l.N, gates = cpu::rnn_gates(l.cell) * l.H;
  StepGrads g;
  g.dgi = empty({rows, gates}, options);
  g.dgh = l.gru() ? empty({rows, gates}, options) : g.dgi;
  g.dh = carried(ghn, l.N, l.P, options);
  if (l.lstm()) g.dc = carried(gcn, l.N, l.H, options);
  if (l.projected()) g.dy = empty({rows, l.P}, options);
  const Tensor outputs = y.reshape({rows, l.P});
  for (int64_t s = l.T - 1; s >= 0; --s) {
    const int64_t t = l.time_of(s), p = l.previous_time(t);
    Tensor gyt = gy.defined() ? gy.select(0, t) : Tensor(), dh = g.dh;
    if (l.projected()) {
      const Tensor dyt = l.rows_at(g.dy, t);
      dyt.copy_(gyt.defined() ? g.dh + gyt : g.dh);
      dh = mm(dyt, l.w_hr);
      gyt = Tensor();
    }
    const Tensor gates_t = l.rows_at(r.gi, t), gh_t = l.rows_at(r.gh, t);
    const Tensor state = l.lstm() ? l.rows_at(r.cs, t) : l.gru() ? Tensor() : l.rows_at(outputs, t);
    const Tensor prev = l.lstm()  ? (p < 0 ? l.c0 : l.rows_at(r.cs, p))
                        : l.gru() ? l.rows_at(r.hp, t)
                                  : Tensor();
    const Tensor dgi_t = l.rows_at(g.dgi, t), dgh_t = l.rows_at(g.dgh, t);
    void *gp = gates_t.data_ptr(), *ghp = gh_t.data_ptr(), *sp = ptr(state), *pp = ptr(prev),
         *gyp = ptr(gyt), *dhp = dh.data_ptr(), *dcp = ptr(g.dc), *dgip = dgi_t.data_ptr(),
         *dghp = dgh_t.data_ptr();
    int64_t n = l.N, hidden = l.H;
    void* params[] = {&gp, &ghp, &sp, &pp, &gyp, &dhp, &dcp, &dgip, &dghp, &n, &hidden};
    launch(op, RnnKernel::StepBackward, l.cell, y, n, hidden, params);
    g.dh = l.gru() ? addmm(g.dh, dgh_t, l.w_hh) : mm(dgi_t, l.w_hh);
  }
  return g;
}

void backward(RnnCell cell, const std::vector<Tensor>& in, std::vector<Tensor>& out,
              const Attrs& a) {
  const OpDef& op = get_op(std::string(rnn_util::op_name(cell)) + "_backward");
  if (!runs_natively(in, out)) return cpu_fallback(op, in, out, a);
  NoGradGuard no_grad;
  const size_t k = rnn_util::num_outputs(cell);
  const Layer l = layer_of(cell, rnn_util::operands(cell, in, k), a.b(0));
  const Tensor y = in[k + rnn_util::num_inputs(cell)].contiguous();
  const Recomputed r = recompute(op.name, l, y);
  const StepGrads g = through_time(op.name, l, r, y, contiguous_or_undefined(in[0]), in[1],
                                   l.lstm() ? in[2] : Tensor());
  rnn_util::Operands grads;
  grads.x = mm(g.dgi, l.w_ih).view({l.T, l.N, l.I});
  grads.h0 = g.dh;
  grads.c0 = g.dc;
  grads.w_ih = mm(g.dgi.t(), l.x);
  grads.w_hh = mm(g.dgh.t(), r.hp);
  grads.b_ih = g.dgi.sum(std::vector<int64_t>{0});
  grads.b_hh = g.dgh.sum(std::vector<int64_t>{0});
  if (l.projected()) grads.w_hr = mm(g.dy.t(), r.hs);
  const std::vector<Tensor> computed = rnn_util::to_inputs(cell, grads);
  for (size_t i = 0; i < computed.size(); ++i)
    if (computed[i].defined()) store(out[i], computed[i]);
}

}  // namespace

std::string rnn_source(RnnKernel kind, RnnCell cell, ScalarType dtype, const std::string& name) {
  KILN_CHECK(is_supported(dtype), "rnn_source: no recurrent kernel for dtype ", dtype);
  KILN_CHECK(kind != RnnKernel::LstmScan || cell == RnnCell::Lstm,
             "rnn_source: the scan kernel is the LSTM's");
  const CellSource c = cell_source(cell);
  const char* body = kind == RnnKernel::Step           ? c.step
                     : kind == RnnKernel::StepBackward ? c.step_backward
                                                       : kLstmScan;
  return "#include <cmath>\n#include <cstdint>\n\nusing T = " + compiler::storage_type(dtype) +
         ";\n" + kCommon + c.helpers + named_kernel(body, name);
}

void register_rnn_kernels() {
  for (RnnCell cell : {RnnCell::Lstm, RnnCell::Gru, RnnCell::Tanh, RnnCell::Relu}) {
    const std::string name = rnn_util::op_name(cell);
    set_kernel(name, kCUDA,
               [cell](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
                 forward(cell, in, out, a);
               });
    set_kernel(name + "_backward", kCUDA,
               [cell](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
                 backward(cell, in, out, a);
               });
  }
}

}  // namespace kiln::cuda
