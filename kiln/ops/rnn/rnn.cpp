// Registry entries lstm, gru, rnn_tanh, rnn_relu (one layer, one direction, whole sequence) and
// their *_backward entries (backpropagation through time in one kernel). See kiln/ops/rnn.h and
// the Note in kiln/backend/cpu/rnn.h.
#include "kiln/ops/rnn.h"

#include "kiln/core/dispatch.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/nn/util.h"
#include "kiln/ops/rnn/util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

using cpu::RnnCell;
using rnn_util::Operands;

struct SymDims {
  SymInt T, N, I, H, P;
};

// The entry's name: the cell's, with "_backward" for the backward entry.
std::string entry_name(RnnCell cell, bool backward) {
  return std::string(rnn_util::op_name(cell)) + (backward ? "_backward" : "");
}

// Checks every operand's rank, dtype and size against x and the weights; returns the sizes.
// Errors name the forward entry or, with `backward`, the backward entry.
SymDims check_operands(RnnCell cell, const Operands& o, bool backward) {
  const std::string op = entry_name(cell, backward);
  const int64_t g = cpu::rnn_gates(cell);
  const Tensor& x = o.x;
  KILN_CHECK(x.dim() == 3, op, ": expected input of shape [T, N, input_size], got ", x.sym_sizes());
  KILN_CHECK(x.is_floating_point(), op, ": expected a floating point input, got ", x.dtype());
  KILN_CHECK(o.w_ih.dim() == 2 && o.w_ih.sym_size(0) % g == 0, op, ": expected w_ih of shape [", g,
             "*hidden_size, input_size], got ", o.w_ih.sym_sizes());
  SymDims d{x.sym_size(0), x.sym_size(1), x.sym_size(2), o.w_ih.sym_size(0) / g,
            o.w_ih.sym_size(0) / g};
  KILN_CHECK(o.w_ih.sym_size(1) == d.I, op, ": input size mismatch: input ", x.sym_sizes(), " has ",
             d.I, " features but w_ih ", o.w_ih.sym_sizes(), " expects ", o.w_ih.sym_size(1));
  if (o.w_hr.defined()) {
    KILN_CHECK(o.w_hr.dim() == 2 && o.w_hr.sym_size(1) == d.H, op,
               ": expected w_hr of shape [proj_size, ", d.H, "], got ", o.w_hr.sym_sizes());
    d.P = o.w_hr.sym_size(0);
  }
  auto expect = [&](const Tensor& t, const char* what, SymShape shape) {
    if (!t.defined()) return;
    KILN_CHECK(t.sym_sizes() == SymIntArrayRef(shape), op, ": expected ", what, " of shape ",
               SymIntArrayRef(shape), ", got ", t.sym_sizes());
    KILN_CHECK(t.dtype() == x.dtype(), op, ": expected ", what, " of dtype ", x.dtype(),
               " (the input's), got ", t.dtype());
  };
  KILN_CHECK(o.h0.defined() && (!rnn_util::is_lstm(cell) || o.c0.defined()), op,
             ": the initial hidden state is required");
  expect(o.h0, "h0", {d.N, d.P});
  expect(o.c0, "c0", {d.N, d.H});
  expect(o.w_ih, "w_ih", {d.H * g, d.I});
  expect(o.w_hh, "w_hh", {d.H * g, d.P});
  expect(o.b_ih, "b_ih", {d.H * g});
  expect(o.b_hh, "b_hh", {d.H * g});
  expect(o.w_hr, "w_hr", {d.P, d.H});
  return d;
}

std::vector<TensorSpec> forward_meta(RnnCell cell, const std::vector<Tensor>& in) {
  const Operands o = rnn_util::operands(cell, in);
  const SymDims d = check_operands(cell, o, false);
  const ScalarType dt = o.x.dtype();
  const Device dev = o.x.device();
  std::vector<TensorSpec> out{meta::spec({d.T, d.N, d.P}, dt, dev),
                              meta::spec({d.N, d.P}, dt, dev)};
  if (rnn_util::is_lstm(cell)) out.push_back(meta::spec({d.N, d.H}, dt, dev));
  return out;
}

// Gradients flowing in (one per forward output), then the forward inputs, then y.
std::vector<TensorSpec> backward_meta(RnnCell cell, const std::vector<Tensor>& in) {
  const size_t k = rnn_util::num_outputs(cell);
  const Operands o = rnn_util::operands(cell, in, k);
  const SymDims d = check_operands(cell, o, true);
  const std::string op = entry_name(cell, true);
  const SymShape y_shape{d.T, d.N, d.P};
  const SymShape grad_shapes[] = {y_shape, {d.N, d.P}, {d.N, d.H}};
  for (size_t i = 0; i < k; ++i) {
    KILN_CHECK(!in[i].defined() || in[i].sym_sizes() == SymIntArrayRef(grad_shapes[i]), op,
               ": expected the gradient of output ", i, " of shape ",
               SymIntArrayRef(grad_shapes[i]), ", got ", in[i].sym_sizes());
  }
  const Tensor& y = in[k + rnn_util::num_inputs(cell)];
  KILN_CHECK(y.sym_sizes() == SymIntArrayRef(y_shape), op, ": expected the output of shape ",
             SymIntArrayRef(y_shape), ", got ", y.sym_sizes());
  const ScalarType dt = o.x.dtype();
  const Device dev = o.x.device();
  const SymInt gh = d.H * cpu::rnn_gates(cell);
  std::vector<TensorSpec> out;
  for (const Tensor& t : rnn_util::to_inputs(cell, o)) {
    out.push_back(meta::spec(t.defined() ? t.sym_sizes().sym_vec() : SymShape{0}, dt, dev));
  }
  // Gradients of absent biases still have the bias's shape (unused by autograd).
  const size_t b_ih = rnn_util::is_lstm(cell) ? 5 : 4;
  out[b_ih] = out[b_ih + 1] = meta::spec({gh}, dt, dev);
  return out;
}

cpu::RnnDims concrete_dims(RnnCell cell, const Operands& o, bool reverse, bool backward) {
  const SymDims s = check_operands(cell, o, backward);
  return {
      cell,   s.T.guard_int(), s.N.guard_int(), s.I.guard_int(), s.H.guard_int(), s.P.guard_int(),
      reverse};
}

template <class T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}
Tensor compute_or_undefined(const Tensor& t) {
  return t.defined() ? nn_util::as_compute(t) : Tensor();
}
Operands compute_operands(const Operands& o) {
  return {compute_or_undefined(o.x),    compute_or_undefined(o.h0),   compute_or_undefined(o.c0),
          compute_or_undefined(o.w_ih), compute_or_undefined(o.w_hh), compute_or_undefined(o.b_ih),
          compute_or_undefined(o.b_hh), compute_or_undefined(o.w_hr)};
}
template <class T>
cpu::RnnWeights<T> weights_of(const Operands& c) {
  return {data_or_null<T>(c.w_ih), data_or_null<T>(c.w_hh), data_or_null<T>(c.b_ih),
          data_or_null<T>(c.b_hh), data_or_null<T>(c.w_hr)};
}
// Preallocated outputs in the compute dtype: the output itself, or a scratch copied back after.
std::vector<Tensor> compute_outputs(const std::vector<Tensor>& out, ScalarType ct) {
  std::vector<Tensor> c;
  for (const Tensor& t : out)
    c.push_back(t.dtype() == ct ? t : empty(t.sym_sizes(), TensorOptions(ct)));
  return c;
}
void store_all(std::vector<Tensor>& out, const std::vector<Tensor>& computed) {
  for (size_t i = 0; i < out.size(); ++i) nn_util::store(out[i], computed[i]);
}

void forward_kernel(RnnCell cell, const std::vector<Tensor>& in, std::vector<Tensor>& out,
                    const Attrs& a) {
  const Operands o = rnn_util::operands(cell, in);
  const cpu::RnnDims d = concrete_dims(cell, o, a.b(0), false);
  const Operands c = compute_operands(o);
  std::vector<Tensor> r = compute_outputs(out, c.x.dtype());
  nn_util::visit_compute(c.x.dtype(), rnn_util::op_name(cell), [&](auto tag) {
    using T = decltype(tag);
    cpu::rnn_forward<T>(d, c.x.data_ptr<T>(), c.h0.data_ptr<T>(), data_or_null<T>(c.c0),
                        weights_of<T>(c), r[0].data_ptr<T>(), r[1].data_ptr<T>(),
                        rnn_util::is_lstm(cell) ? r[2].data_ptr<T>() : nullptr);
  });
  store_all(out, r);
}

void backward_kernel(RnnCell cell, const std::vector<Tensor>& in, std::vector<Tensor>& out,
                     const Attrs& a) {
  const size_t k = rnn_util::num_outputs(cell);
  const Operands o = rnn_util::operands(cell, in, k);
  const cpu::RnnDims d = concrete_dims(cell, o, a.b(0), true);
  const Operands c = compute_operands(o);
  const Tensor y = nn_util::as_compute(in[k + rnn_util::num_inputs(cell)]);
  std::vector<Tensor> grads_in;
  for (size_t i = 0; i < k; ++i) grads_in.push_back(compute_or_undefined(in[i]));
  std::vector<Tensor> r = compute_outputs(out, c.x.dtype());
  const Operands g = rnn_util::operands(cell, r);
  nn_util::visit_compute(c.x.dtype(), rnn_util::op_name(cell), [&](auto tag) {
    using T = decltype(tag);
    auto dst = [&](const Tensor& src, const Tensor& grad) {
      return src.defined() ? grad.data_ptr<T>() : nullptr;
    };
    const cpu::RnnGrads<T> grads{dst(o.x, g.x),        dst(o.h0, g.h0),     dst(o.c0, g.c0),
                                 dst(o.w_ih, g.w_ih),  dst(o.w_hh, g.w_hh), g.b_ih.data_ptr<T>(),
                                 g.b_hh.data_ptr<T>(), dst(o.w_hr, g.w_hr)};
    cpu::rnn_backward<T>(d, c.x.data_ptr<T>(), c.h0.data_ptr<T>(), data_or_null<T>(c.c0),
                         weights_of<T>(c), y.data_ptr<T>(), data_or_null<T>(grads_in[0]),
                         data_or_null<T>(grads_in[1]),
                         k > 2 ? data_or_null<T>(grads_in[2]) : nullptr, grads);
  });
  store_all(out, r);
}

std::vector<Tensor> forward_backward(RnnCell cell, const OpDef& backward_op,
                                     const BackwardContext& c) {
  const size_t k = rnn_util::num_outputs(cell);
  std::vector<Tensor> in;
  for (size_t i = 0; i < k; ++i) in.push_back(c.grad(i));
  for (size_t i = 0; i < c.inputs.size(); ++i) in.push_back(c.input(i));
  in.push_back(c.output(0));
  std::vector<Tensor> g = call_op(backward_op, std::move(in), c.attrs);
  for (size_t i = 0; i < g.size(); ++i)
    if (!c.needs_grad(i) || !c.input(i).defined()) g[i] = Tensor();
  return g;
}

std::string schema(RnnCell cell, bool backward) {
  const bool lstm = rnn_util::is_lstm(cell);
  std::string inputs = std::string("Tensor input, Tensor h0, ") + (lstm ? "Tensor c0, " : "") +
                       "Tensor w_ih, Tensor w_hh, Tensor? b_ih, Tensor? b_hh, " +
                       (lstm ? "Tensor? w_hr, " : "");
  const std::string name = rnn_util::op_name(cell);
  if (!backward) {
    return name + "(" + inputs + "bool reverse=False) -> (Tensor output, Tensor h_n" +
           (lstm ? ", Tensor c_n)" : ")");
  }
  return name + "_backward(Tensor? grad_output, Tensor? grad_h_n, " +
         (lstm ? "Tensor? grad_c_n, " : "") + inputs + "Tensor output, bool reverse=False) -> " +
         "(Tensor grad_input, Tensor grad_h0, " + (lstm ? "Tensor grad_c0, " : "") +
         "Tensor grad_w_ih, Tensor grad_w_hh, Tensor grad_b_ih, Tensor grad_b_hh" +
         (lstm ? ", Tensor grad_w_hr)" : ")");
}

// Error samples of the operand checks, from the cell's first sample; `backward`: for the backward
// entry (gradients first, the output last).
std::vector<OpErrorSample> error_samples(RnnCell cell, bool backward) {
  const size_t k = backward ? rnn_util::num_outputs(cell) : 0;
  const OpSample base = backward ? rnn_util::backward_samples(cell, kFloat32).at(0)
                                 : rnn_util::forward_samples(cell, kFloat32).at(0);
  const Operands o = rnn_util::operands(cell, base.inputs, k);
  std::vector<OpErrorSample> s;
  // base's inputs with the forward operands replaced by `changed`.
  auto add = [&](const Operands& changed, std::string expected, const char* desc) {
    std::vector<Tensor> in = base.inputs;
    const std::vector<Tensor> ops = rnn_util::to_inputs(cell, changed);
    std::copy(ops.begin(), ops.end(), in.begin() + static_cast<std::ptrdiff_t>(k));
    s.push_back({std::move(in), base.attrs, std::move(expected), desc});
  };
  const std::vector<int64_t> xs = nn_util::concrete_sizes(o.x);
  Operands c = o;
  c.x = o.x.select(1, 0);
  add(c, detail::str_cat("expected input of shape [T, N, input_size], got ", c.x.sym_sizes()),
      "input of rank 2");
  c = o;
  c.x = o.x.to(kInt64);
  add(c, "expected a floating point input, got int64", "integer input");
  c = o;
  c.w_ih = o.w_ih.select(1, 0);
  add(c, detail::str_cat("input_size], got ", c.w_ih.sym_sizes()), "w_ih of rank 1");
  c = o;
  c.x = samples::make({xs[0], xs[1], xs[2] + 1}, kFloat32);
  add(c,
      detail::str_cat("has ", xs[2] + 1, " features but w_ih ", o.w_ih.sym_sizes(), " expects ",
                      xs[2]),
      "input size");
  c = o;
  c.h0 = Tensor();
  add(c, "the initial hidden state is required", "no h0");
  c = o;
  c.h0 = samples::make({xs[1] + 1, o.h0.sym_size(1).guard_int()}, kFloat32);
  add(c, detail::str_cat("expected h0 of shape ", o.h0.sym_sizes(), ", got ", c.h0.sym_sizes()),
      "h0's shape");
  c = o;
  c.w_hh = o.w_hh.to(kFloat64);
  add(c, "expected w_hh of dtype float32 (the input's), got float64", "w_hh's dtype");
  if (rnn_util::is_lstm(cell)) {
    const int64_t h = o.w_hh.sym_size(1).guard_int();
    c = o;
    c.w_hr = samples::make({2, h + 1}, kFloat32);
    add(c, detail::str_cat("expected w_hr of shape [proj_size, ", h, "], got ", c.w_hr.sym_sizes()),
        "w_hr's shape");
  }
  if (backward) {
    std::vector<Tensor> in = base.inputs;
    in[0] = samples::make({1}, kFloat32);
    s.push_back(
        {in, base.attrs, "expected the gradient of output 0 of shape ", "gradient's shape"});
    in = base.inputs;
    in.back() = samples::make({1}, kFloat32);
    s.push_back({in, base.attrs, "expected the output of shape ", "output's shape"});
  }
  return s;
}

// Registers `<name>` and `<name>_backward` for one cell type. The backward entry has no backward
// of its own: double backward through recurrent layers is not supported.
bool define_entries(RnnCell cell) {
  const std::string name = rnn_util::op_name(cell);
  OpDef& bwd = register_op(name + "_backward")
                   .schema(schema(cell, true))
                   .meta([cell](const std::vector<Tensor>& in, const Attrs&) {
                     return backward_meta(cell, in);
                   })
                   .cpu([cell](const std::vector<Tensor>& in, std::vector<Tensor>& out,
                               const Attrs& a) { backward_kernel(cell, in, out, a); })
                   .samples([cell](ScalarType dt) { return rnn_util::backward_samples(cell, dt); })
                   .error_samples([cell] { return error_samples(cell, true); })
                   .dtypes({kFloat64, kFloat32})
                   .lowering("extern:" + name + "_backward");
  register_op(name)
      .schema(schema(cell, false))
      .meta([cell](const std::vector<Tensor>& in, const Attrs&) { return forward_meta(cell, in); })
      .cpu([cell](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
        forward_kernel(cell, in, out, a);
      })
      .save_outputs({0})  // the output sequence; every input
      .backward([cell, &bwd](const BackwardContext& c) { return forward_backward(cell, bwd, c); })
      .first_order_only()
      .samples([cell](ScalarType dt) { return rnn_util::forward_samples(cell, dt); })
      .error_samples([cell] { return error_samples(cell, false); })
      .reference([cell](const std::vector<Tensor>& in, const Attrs& a) {
        return rnn_util::reference(cell, in, a.b(0));
      })
      .dtypes({kFloat64, kFloat32})
      .lowering("extern:" + name);
  return true;
}

[[maybe_unused]] const bool registered =
    define_entries(RnnCell::Lstm) && define_entries(RnnCell::Gru) &&
    define_entries(RnnCell::Tanh) && define_entries(RnnCell::Relu);

std::tuple<Tensor, Tensor> run_simple(RnnCell cell, const Tensor& input, const Tensor& h0,
                                      const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                                      const Tensor& b_hh, bool reverse) {
  const std::vector<Tensor> out =
      call_op(get_op(rnn_util::op_name(cell)), {input, h0, w_ih, w_hh, b_ih, b_hh}, {reverse});
  return {out[0], out[1]};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> lstm_layer(const Tensor& input, const Tensor& h0,
                                              const Tensor& c0, const Tensor& w_ih,
                                              const Tensor& w_hh, const Tensor& b_ih,
                                              const Tensor& b_hh, const Tensor& w_hr,
                                              bool reverse) {
  static const OpDef& op = get_op("lstm");
  const std::vector<Tensor> out =
      call_op(op, {input, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr}, {reverse});
  return {out[0], out[1], out[2]};
}

std::tuple<Tensor, Tensor> gru_layer(const Tensor& input, const Tensor& h0, const Tensor& w_ih,
                                     const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh,
                                     bool reverse) {
  return run_simple(RnnCell::Gru, input, h0, w_ih, w_hh, b_ih, b_hh, reverse);
}

std::tuple<Tensor, Tensor> rnn_tanh_layer(const Tensor& input, const Tensor& h0, const Tensor& w_ih,
                                          const Tensor& w_hh, const Tensor& b_ih,
                                          const Tensor& b_hh, bool reverse) {
  return run_simple(RnnCell::Tanh, input, h0, w_ih, w_hh, b_ih, b_hh, reverse);
}

std::tuple<Tensor, Tensor> rnn_relu_layer(const Tensor& input, const Tensor& h0, const Tensor& w_ih,
                                          const Tensor& w_hh, const Tensor& b_ih,
                                          const Tensor& b_hh, bool reverse) {
  return run_simple(RnnCell::Relu, input, h0, w_ih, w_hh, b_ih, b_hh, reverse);
}

}  // namespace kiln
