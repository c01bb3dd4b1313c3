// batch_norm and group_norm over (N, C, *) inputs (fused one-pass kernels; backward written with
// Kiln ops), and instance_norm as batch_norm over a (1, N*C, *) view, as PyTorch does.
#include <cmath>

#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/norm.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/nn/norm_util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

using nn_util::as_compute;
using nn_util::channel_shape;
using nn_util::sum_except;

ScalarType stat_dtype(ScalarType t) { return t == kFloat64 ? kFloat64 : kFloat32; }

// Elements per channel of each sample: the product of dims 2...
int64_t inner_size(const Tensor& x) {
  int64_t n = 1;
  for (int64_t d = 2; d < x.dim(); ++d) n *= x.sym_size(d).guard_int();
  return n;
}

void check_channel_param(const char* op, const char* what, const Tensor& t, const SymInt& c) {
  if (!t.defined()) return;
  KILN_CHECK(t.dim() == 1 && t.sym_size(0) == c, op, ": expected ", what, " of shape [", c,
             "], got ", t.sym_sizes());
}

// ---- batch_norm ----
// inputs: input, weight, bias, running_mean, running_var; attrs: training, momentum, eps.

std::vector<TensorSpec> batch_norm_meta(const std::vector<Tensor>& in, const Attrs& a) {
  const Tensor& x = in[0];
  KILN_CHECK(x.dim() >= 2, "batch_norm: expected an input of shape (N, C, *), got ", x.sym_sizes());
  KILN_CHECK(x.is_floating_point(), "batch_norm: expected a floating point input, got ", x.dtype());
  const SymInt c = x.sym_size(1);
  const char* names[] = {"weight", "bias", "running_mean", "running_var"};
  for (int i = 1; i < 5; ++i) check_channel_param("batch_norm", names[i - 1], in[i], c);
  if (a.b(0)) {
    SymInt per_channel = x.sym_numel() / (c == 0 ? SymInt(1) : c);
    KILN_CHECK(per_channel != 1 || x.sym_numel() == 0,
               "batch_norm: Expected more than 1 value per channel when training, got input size ",
               x.sym_sizes());
  } else {
    KILN_CHECK(in[3].defined() && in[4].defined(),
               "batch_norm: running_mean and running_var must be defined in evaluation mode");
  }
  const ScalarType st = stat_dtype(x.dtype());
  return {meta::spec(x.sym_sizes(), x.dtype(), x.device()), meta::spec({c}, st, x.device()),
          meta::spec({c}, st, x.device())};
}

// running = (1 - momentum) * running + momentum * batch, in the running tensor's dtype.
void update_running(const Tensor& running, const std::vector<double>& batch, double momentum) {
  std::vector<double> r = nn_util::to_doubles(running);
  for (size_t i = 0; i < r.size(); ++i) r[i] = (1 - momentum) * r[i] + momentum * batch[i];
  cpu::copy(running, nn_util::from_doubles(r, {static_cast<int64_t>(r.size())}));
}

void batch_norm_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const bool training = a.b(0);
  const double momentum = a.f(1), eps = a.f(2);
  const Tensor x = as_compute(in[0]);
  const int64_t n = x.sym_size(0).guard_int(), c = x.sym_size(1).guard_int(), inner = inner_size(x);
  std::vector<double> mean(c), var(c);
  nn_util::visit_compute(x.dtype(), "batch_norm", [&](auto tag) {
    using T = decltype(tag);
    if (training) {
      cpu::channel_moments<T>(x.data_ptr<T>(), n, c, inner, mean.data(), var.data());
      const double count = static_cast<double>(n * inner);
      std::vector<double> unbiased(var);
      for (double& v : unbiased) v *= count / std::max(count - 1, 1.0);
      if (in[3].defined()) update_running(in[3], mean, momentum);
      if (in[4].defined()) update_running(in[4], unbiased, momentum);
    } else {
      mean = nn_util::to_doubles(in[3]);
      var = nn_util::to_doubles(in[4]);
    }
    T* pm = out[1].data_ptr<T>();
    T* pr = out[2].data_ptr<T>();
    for (int64_t k = 0; k < c; ++k) {
      pm[k] = static_cast<T>(mean[k]);
      pr[k] = static_cast<T>(1.0 / std::sqrt(var[k] + eps));
    }
    // Per-(n, c) row statistics for the shared affine loop.
    std::vector<T> row_mean(n * c), row_rstd(n * c);
    for (int64_t r = 0; r < n * c; ++r) {
      row_mean[r] = pm[r % c];
      row_rstd[r] = pr[r % c];
    }
    const Tensor w = in[1].defined() ? as_compute(in[1]) : Tensor();
    const Tensor b = in[2].defined() ? as_compute(in[2]) : Tensor();
    Tensor y = out[0].dtype() == x.dtype() ? out[0] : empty(out[0].sym_sizes(), x.options());
    cpu::affine_normalize<T>(x.data_ptr<T>(), y.data_ptr<T>(), n * c, inner, row_mean.data(),
                             row_rstd.data(), w.defined() ? w.data_ptr<T>() : nullptr,
                             b.defined() ? b.data_ptr<T>() : nullptr, true, c);
    nn_util::store(out[0], y);
  });
}

std::vector<Tensor> batch_norm_backward(const BackwardContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& w = c.input(1);
  const int64_t ch = x.sym_size(1).guard_int();
  const std::vector<int64_t> cs = channel_shape(ch, x.dim());
  const Tensor mean_b = c.output(1).view(cs);
  const Tensor rstd_b = c.output(2).view(cs);
  const Tensor xhat = (x - mean_b) * rstd_b;
  const Tensor gy = c.grad(0).defined() ? c.grad(0) : zeros_like(xhat);
  const Tensor g = w.defined() ? gy * w.view(cs) : gy;
  std::vector<Tensor> grads(5);
  if (c.attrs.b(0)) {
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (d != 1) dims.push_back(d);
    const double n = static_cast<double>(x.sym_numel().guard_int() / std::max<int64_t>(ch, 1));
    auto b = [&](const Tensor& t) { return t.defined() ? t.view(cs) : t; };
    if (c.needs_grad(0))
      grads[0] = nn_util::normalized_input_grad(g, xhat, rstd_b, dims, true, b(c.grad(1)),
                                                b(c.grad(2)), n);
  } else {
    if (c.needs_grad(0)) grads[0] = g * rstd_b;
    if (c.needs_grad(3)) {
      grads[3] = sum_except(-g * rstd_b, 1);
      if (c.grad(1).defined()) grads[3] = grads[3] + c.grad(1);
    }
    if (c.needs_grad(4)) {
      const Tensor rstd3 = c.output(2) * c.output(2) * c.output(2);
      grads[4] = sum_except(g * (x - mean_b), 1) * rstd3 * -0.5;
      if (c.grad(2).defined()) grads[4] = grads[4] + c.grad(2) * rstd3 * -0.5;
    }
  }
  if (c.needs_grad(1)) grads[1] = sum_except(gy * xhat, 1);
  if (c.needs_grad(2)) grads[2] = sum_except(gy, 1);
  return grads;
}

std::vector<OpSample> batch_norm_samples(ScalarType dt) {
  auto mk = [&](std::vector<int64_t> s, double lo = -2, double hi = 2, bool nc = false) {
    return samples::make(s, dt, lo, hi, nc);
  };
  const double eps = 1e-5;
  return {
      {{mk({4, 3}), mk({3}), mk({3}), mk({3}), mk({3}, 0.5, 2)}, {true, 0.1, eps}, "train 2-d"},
      {{mk({2, 3, 4}), Tensor(), Tensor(), Tensor(), Tensor()},
       {true, 0.1, eps},
       "train 3-d, no affine, no running stats"},
      {{mk({2, 3, 2, 2}), mk({3}), mk({3}), mk({3}), mk({3}, 0.5, 2)},
       {false, 0.1, eps},
       "eval 4-d"},
      {{mk({3, 5}, -2, 2, true).t(), mk({3}), Tensor(), Tensor(), Tensor()},
       {true, 0.3, eps},
       "train non-contiguous"},
  };
}

std::vector<Tensor> batch_norm_reference(const std::vector<Tensor>& in, const Attrs& a) {
  const std::vector<int64_t> shape = nn_util::concrete_sizes(in[0]);
  const std::vector<double> x = nn_util::to_doubles(in[0]);
  const int64_t n = shape[0], c = shape[1];
  int64_t inner = 1;
  for (size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
  auto at = [&](int64_t i, int64_t k, int64_t j) { return (i * c + k) * inner + j; };
  std::vector<double> y(x.size());
  for (int64_t k = 0; k < c; ++k) {
    double m = 0, v = 0;
    if (a.b(0)) {
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < inner; ++j) m += x[at(i, k, j)] / (n * inner);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < inner; ++j) v += std::pow(x[at(i, k, j)] - m, 2) / (n * inner);
    } else {
      m = nn_util::to_doubles(in[3])[k];
      v = nn_util::to_doubles(in[4])[k];
    }
    const double w = in[1].defined() ? nn_util::to_doubles(in[1])[k] : 1.0;
    const double b = in[2].defined() ? nn_util::to_doubles(in[2])[k] : 0.0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < inner; ++j)
        y[at(i, k, j)] = (x[at(i, k, j)] - m) / std::sqrt(v + a.f(2)) * w + b;
  }
  return {nn_util::from_doubles(y, shape)};
}

// ---- group_norm ----
// inputs: input, weight, bias; attrs: num_groups, eps. Outputs y, mean (N, G), rstd (N, G).

std::vector<TensorSpec> group_norm_meta(const std::vector<Tensor>& in, const Attrs& a) {
  const Tensor& x = in[0];
  KILN_CHECK(x.dim() >= 2, "group_norm: expected an input of shape (N, C, *), got ", x.sym_sizes());
  KILN_CHECK(x.is_floating_point(), "group_norm: expected a floating point input, got ", x.dtype());
  const int64_t g = a.i(0);
  KILN_CHECK(g > 0 && x.sym_size(1) % g == 0,
             "group_norm: Expected number of channels in input to be divisible by num_groups, but "
             "got input of shape ",
             x.sym_sizes(), " and num_groups=", g);
  check_channel_param("group_norm", "weight", in[1], x.sym_size(1));
  check_channel_param("group_norm", "bias", in[2], x.sym_size(1));
  const ScalarType st = stat_dtype(x.dtype());
  return {meta::spec(x.sym_sizes(), x.dtype(), x.device()),
          meta::spec({x.sym_size(0), SymInt(g)}, st, x.device()),
          meta::spec({x.sym_size(0), SymInt(g)}, st, x.device())};
}

void group_norm_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const Tensor x = as_compute(in[0]);
  const int64_t n = x.sym_size(0).guard_int(), c = x.sym_size(1).guard_int(), g = a.i(0);
  const int64_t inner = inner_size(x), per_group = c / g * inner;
  nn_util::visit_compute(x.dtype(), "group_norm", [&](auto tag) {
    using T = decltype(tag);
    T* pm = out[1].data_ptr<T>();
    T* pr = out[2].data_ptr<T>();
    cpu::row_moments<T>(x.data_ptr<T>(), n * g, per_group, true, a.f(1), pm, pr);
    std::vector<T> row_mean(n * c), row_rstd(n * c);
    for (int64_t r = 0; r < n * c; ++r) {
      const int64_t group = (r / c) * g + (r % c) / (c / g);
      row_mean[r] = pm[group];
      row_rstd[r] = pr[group];
    }
    const Tensor w = in[1].defined() ? as_compute(in[1]) : Tensor();
    const Tensor b = in[2].defined() ? as_compute(in[2]) : Tensor();
    Tensor y = out[0].dtype() == x.dtype() ? out[0] : empty(out[0].sym_sizes(), x.options());
    cpu::affine_normalize<T>(x.data_ptr<T>(), y.data_ptr<T>(), n * c, inner, row_mean.data(),
                             row_rstd.data(), w.defined() ? w.data_ptr<T>() : nullptr,
                             b.defined() ? b.data_ptr<T>() : nullptr, true, c);
    nn_util::store(out[0], y);
  });
}

std::vector<Tensor> group_norm_backward(const BackwardContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& w = c.input(1);
  const int64_t n = x.sym_size(0).guard_int(), ch = x.sym_size(1).guard_int(), g = c.attrs.i(0);
  const SymShape grouped{SymInt(n), SymInt(g), SymInt(-1)};
  const Tensor mean3 = c.output(1).unsqueeze(-1);
  const Tensor rstd3 = c.output(2).unsqueeze(-1);
  const Tensor xhat3 = (x.reshape(grouped) - mean3) * rstd3;
  const Tensor xhat = xhat3.reshape(x.sym_sizes());
  const Tensor gy = c.grad(0).defined() ? c.grad(0) : zeros_like(xhat);
  const Tensor gw = w.defined() ? gy * w.view(channel_shape(ch, x.dim())) : gy;
  std::vector<Tensor> grads(3);
  if (c.needs_grad(0)) {
    auto u = [](const Tensor& t) { return t.defined() ? t.unsqueeze(-1) : t; };
    const double m = static_cast<double>(x.sym_numel().guard_int() / std::max<int64_t>(n * g, 1));
    grads[0] = nn_util::normalized_input_grad(gw.reshape(grouped), xhat3, rstd3, {2}, true,
                                              u(c.grad(1)), u(c.grad(2)), m)
                   .reshape(x.sym_sizes());
  }
  if (c.needs_grad(1)) grads[1] = sum_except(gy * xhat, 1);
  if (c.needs_grad(2)) grads[2] = sum_except(gy, 1);
  return grads;
}

std::vector<OpSample> group_norm_samples(ScalarType dt) {
  auto mk = [&](std::vector<int64_t> s, bool nc = false) {
    return samples::make(s, dt, -2, 2, nc);
  };
  const double eps = 1e-5;
  return {
      {{mk({2, 6, 3}), mk({6}), mk({6})}, {int64_t{3}, eps}, "3 groups"},
      {{mk({2, 4, 2, 2}), Tensor(), Tensor()}, {int64_t{2}, eps}, "4-d, no affine"},
      {{mk({3, 4}), mk({4}), mk({4})}, {int64_t{1}, eps}, "2-d, one group"},
      {{mk({4, 3}, true).t(), mk({4}), Tensor()}, {int64_t{4}, 0.1}, "non-contiguous"},
  };
}

std::vector<Tensor> group_norm_reference(const std::vector<Tensor>& in, const Attrs& a) {
  const std::vector<int64_t> shape = nn_util::concrete_sizes(in[0]);
  const std::vector<double> x = nn_util::to_doubles(in[0]);
  const int64_t n = shape[0], c = shape[1], g = a.i(0);
  const int64_t inner = static_cast<int64_t>(x.size()) / std::max<int64_t>(n * c, 1);
  const int64_t m = c / g * inner;
  std::vector<double> w = in[1].defined() ? nn_util::to_doubles(in[1]) : std::vector<double>(c, 1);
  std::vector<double> b = in[2].defined() ? nn_util::to_doubles(in[2]) : std::vector<double>(c, 0);
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < n * g; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < m; ++i) mean += x[r * m + i] / m;
    for (int64_t i = 0; i < m; ++i) var += std::pow(x[r * m + i] - mean, 2) / m;
    for (int64_t i = 0; i < m; ++i) {
      const int64_t ch = (r % g) * (c / g) + i / inner;
      y[r * m + i] = (x[r * m + i] - mean) / std::sqrt(var + a.f(1)) * w[ch] + b[ch];
    }
  }
  return {nn_util::from_doubles(y, shape)};
}

std::vector<OpErrorSample> batch_norm_error_samples() {
  using samples::make;
  const Tensor x = make({2, 3, 4}, kFloat32), c = make({3}, kFloat32), no;
  const Attrs train{true, 0.1, 1e-5}, eval{false, 0.1, 1e-5};
  return {
      {{make({3}, kFloat32), no, no, no, no},
       train,
       "expected an input of shape (N, C, *), got [3]",
       "vector"},
      {{x.to(kInt64), no, no, no, no},
       train,
       "expected a floating point input, got int64",
       "integers"},
      {{x, make({4}, kFloat32), no, no, no},
       train,
       "expected weight of shape [3], got [4]",
       "weight"},
      {{x, c, make({3, 1}, kFloat32), no, no},
       train,
       "expected bias of shape [3], got [3, 1]",
       "bias"},
      {{x, c, c, make({2}, kFloat32), c},
       eval,
       "expected running_mean of shape [3], got [2]",
       "running_mean"},
      {{x, c, c, c, make({2}, kFloat32)},
       eval,
       "expected running_var of shape [3], got [2]",
       "running_var"},
      {{make({1, 3}, kFloat32), no, no, no, no},
       train,
       "Expected more than 1 value per channel when training, got input size [1, 3]",
       "one value per channel"},
      {{x, no, no, c, no},
       eval,
       "running_mean and running_var must be defined in evaluation mode",
       "evaluation without running_var"},
  };
}

std::vector<OpErrorSample> group_norm_error_samples() {
  using samples::make;
  const Tensor x = make({2, 6, 4}, kFloat32), no;
  const Attrs two{int64_t{2}, 1e-5};
  return {
      {{make({6}, kFloat32), no, no},
       two,
       "expected an input of shape (N, C, *), got [6]",
       "vector"},
      {{x.to(kInt64), no, no}, two, "expected a floating point input, got int64", "integers"},
      {{x, no, no},
       {int64_t{4}, 1e-5},
       "but got input of shape [2, 6, 4] and num_groups=4",
       "groups that do not divide the channels"},
      {{x, no, no}, {int64_t{0}, 1e-5}, "and num_groups=0", "no groups"},
      {{x, make({3}, kFloat32), no}, two, "expected weight of shape [6], got [3]", "weight"},
      {{x, no, make({3}, kFloat32)}, two, "expected bias of shape [6], got [3]", "bias"},
  };
}

}  // namespace

KILN_REGISTER_OP(batch_norm)
    .schema(
        "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!)? running_mean, "
        "Tensor(b!)? running_var, bool training, float momentum, float eps) "
        "-> (Tensor out, Tensor save_mean, Tensor save_rstd)")
    .meta(batch_norm_meta)
    .cpu(batch_norm_kernel)
    .save_inputs({0, 1})   // input, weight
    .save_outputs({1, 2})  // save_mean, save_rstd: not the output (`out += residual` is legal)
    .backward(batch_norm_backward)
    .samples(batch_norm_samples)
    .error_samples(batch_norm_error_samples)
    .reference(batch_norm_reference)
    .dtypes(nn_util::kNNDtypes)
    .lowering("extern:batch_norm");

KILN_REGISTER_OP(group_norm)
    .schema(
        "group_norm(Tensor input, int num_groups, Tensor? weight, Tensor? bias, float eps) "
        "-> (Tensor out, Tensor mean, Tensor rstd)")
    .meta(group_norm_meta)
    .cpu(group_norm_kernel)
    .save_inputs({0, 1})
    .save_outputs({1, 2})
    .backward(group_norm_backward)
    .samples(group_norm_samples)
    .error_samples(group_norm_error_samples)
    .reference(group_norm_reference)
    .dtypes(nn_util::kNNDtypes)
    .lowering("extern:group_norm");

Tensor batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, bool training,
                  double momentum, double eps) {
  static const OpDef& op = get_op("batch_norm");
  return call_op(op, {input, weight, bias, running_mean, running_var},
                 {training, momentum, eps})[0];
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  static const OpDef& op = get_op("group_norm");
  return call_op(op, {input, weight, bias}, {num_groups, eps})[0];
}

Tensor instance_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                     const Tensor& running_mean, const Tensor& running_var, bool use_input_stats,
                     double momentum, double eps) {
  KILN_CHECK(input.dim() >= 2, "instance_norm: expected an input of shape (N, C, *), got ",
             input.sym_sizes());
  KILN_CHECK(use_input_stats || (running_mean.defined() && running_var.defined()),
             "instance_norm: Expected running_mean and running_var to be defined when "
             "use_input_stats is false");
  const SymInt n = input.sym_size(0), c = input.sym_size(1);
  SymShape shape = input.sym_sizes();
  shape[0] = 1;
  shape[1] = n * c;
  auto rep = [&](const Tensor& t) { return t.defined() ? t.repeat({n}) : t; };
  Tensor rm = rep(running_mean), rv = rep(running_var);
  Tensor out = batch_norm(input.reshape(shape), rep(weight), rep(bias), rm, rv, use_input_stats,
                          momentum, eps);
  NoGradGuard no_grad;
  if (running_mean.defined()) {
    Tensor target = running_mean;
    target.copy_(rm.view({n, c}).mean(IntArrayRef{0}));
  }
  if (running_var.defined()) {
    Tensor target = running_var;
    target.copy_(rv.view({n, c}).mean(IntArrayRef{0}));
  }
  return out.view(input.sym_sizes());
}

}  // namespace kiln
