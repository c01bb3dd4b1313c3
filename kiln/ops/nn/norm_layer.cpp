// layer_norm and rms_norm: statistics over the trailing normalized_shape dims (fused one-pass
// kernel; backward through the fused layer_norm_backward/rms_norm_backward ops). Outputs: y, then
// the saved statistics.
#include <cmath>
#include <limits>

#include "kiln/backend/cpu/norm.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/nn/norm_util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

using nn_util::as_compute;

ScalarType stat_dtype(ScalarType t) { return t == kFloat64 ? kFloat64 : kFloat32; }

// Checks that input ends with normalized_shape and weight/bias have that shape; returns the
// number of leading (batch) dims.
int64_t check_normalized(const char* op, const Tensor& x, const std::vector<int64_t>& ns,
                         const Tensor& w, const Tensor& b) {
  const int64_t k = static_cast<int64_t>(ns.size());
  KILN_CHECK(k >= 1, op, ": normalized_shape must have at least one dimension, got ",
             IntArrayRef(ns));
  KILN_CHECK(x.is_floating_point(), op, ": expected a floating point input, got ", x.dtype());
  bool ok = x.dim() >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = x.sym_size(x.dim() - k + i) == ns[i];
  KILN_CHECK(ok, op, ": Given normalized_shape=", IntArrayRef(ns),
             ", expected an input whose last dims are ", IntArrayRef(ns),
             ", but got input of size ", x.sym_sizes());
  for (const Tensor* p : {&w, &b}) {
    if (!p->defined()) continue;
    KILN_CHECK(p->sym_sizes() == ns, op, ": expected weight and bias of shape ", IntArrayRef(ns),
               ", got ", p->sym_sizes());
  }
  return x.dim() - k;
}

std::vector<TensorSpec> row_norm_meta(const char* op, const std::vector<Tensor>& in, const Attrs& a,
                                      int stats) {
  const Tensor& x = in[0];
  const int64_t lead = check_normalized(op, x, a.ints(0), in[1], stats == 2 ? in[2] : Tensor());
  SymShape stat_shape = x.sym_sizes();
  for (int64_t d = lead; d < x.dim(); ++d) stat_shape[d] = 1;
  std::vector<TensorSpec> out{meta::spec(x.sym_sizes(), x.dtype(), x.device())};
  for (int i = 0; i < stats; ++i)
    out.push_back(meta::spec(stat_shape, stat_dtype(x.dtype()), x.device()));
  return out;
}

// Shared kernel: centered (layer_norm: outputs y, mean, rstd) or not (rms_norm: y, rstd).
void row_norm_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, double eps, int64_t k,
                     bool centered) {
  const Tensor& input = in[0];
  const Tensor x = as_compute(input);
  const Tensor w = in[1].defined() ? as_compute(in[1]) : Tensor();
  const Tensor b = centered && in[2].defined() ? as_compute(in[2]) : Tensor();
  int64_t n = 1;
  for (int64_t d = input.dim() - k; d < input.dim(); ++d) n *= input.sym_size(d).guard_int();
  const int64_t rows = n == 0 ? 0 : input.sym_numel().guard_int() / n;
  Tensor y = out[0].dtype() == x.dtype() ? out[0] : empty(out[0].sym_sizes(), x.options());
  const Tensor& mean = centered ? out[1] : Tensor();
  const Tensor& rstd = centered ? out[2] : out[1];
  nn_util::visit_compute(x.dtype(), centered ? "layer_norm" : "rms_norm", [&](auto tag) {
    using T = decltype(tag);
    T* pm = centered ? mean.data_ptr<T>() : nullptr;
    cpu::row_normalize<T>(x.data_ptr<T>(), y.data_ptr<T>(), rows, n, centered, eps, pm,
                          rstd.data_ptr<T>(), w.defined() ? w.data_ptr<T>() : nullptr,
                          b.defined() ? b.data_ptr<T>() : nullptr);
  });
  nn_util::store(out[0], y);
}

// The fused layer_norm_backward/rms_norm_backward op gives the input and parameter gradients;
// gradients that reached the saved statistics (double backward) add their terms on top.
std::vector<Tensor> row_norm_backward(const BackwardContext& c, bool centered) {
  static const OpDef& layer_op = get_op("layer_norm_backward");
  static const OpDef& rms_op = get_op("rms_norm_backward");
  const Tensor& x = c.input(0);
  const Tensor& w = c.input(1);
  const Tensor& rstd = c.output(centered ? 2 : 1);
  const Tensor gy = c.grad(0).defined() ? c.grad(0) : zeros_like(x);
  std::vector<Tensor> in{gy, x};
  if (centered) in.push_back(c.output(1));
  in.push_back(rstd);
  in.push_back(w);
  std::vector<Tensor> grads = call_op(centered ? layer_op : rms_op, in, {c.attrs.ints(0)});
  const Tensor& grad_mean = centered ? c.grad(1) : Tensor();
  const Tensor& grad_rstd = c.grad(centered ? 2 : 1);
  if (grad_mean.defined() || grad_rstd.defined()) {
    const std::vector<int64_t> dims =
        nn_util::trailing_dims(x.dim(), static_cast<int64_t>(c.attrs.ints(0).size()));
    double n = 1;
    for (int64_t d : dims) n *= static_cast<double>(x.sym_size(d).guard_int());
    if (grad_mean.defined()) grads[0] = grads[0] + grad_mean / n;
    if (grad_rstd.defined()) {
      const Tensor xhat = centered ? (x - c.output(1)) * rstd : x * rstd;
      grads[0] = grads[0] - grad_rstd * rstd * rstd * xhat / n;
    }
  }
  if (!w.defined()) grads[1] = Tensor();
  if (centered && !c.needs_grad(2)) grads[2] = Tensor();
  return grads;
}

std::vector<OpSample> row_norm_samples(ScalarType dt, bool centered) {
  auto mk = [&](std::vector<int64_t> s, bool nc = false) {
    return samples::make(s, dt, -2, 2, nc);
  };
  using V = std::vector<int64_t>;
  const double eps = 1e-5;
  auto in = [&](Tensor x, Tensor w, Tensor b) {
    return centered ? std::vector<Tensor>{x, w, b} : std::vector<Tensor>{x, w};
  };
  return {
      {in(mk({2, 3, 4}), mk({4}), mk({4})), {V{4}, eps}, "affine last dim"},
      {in(mk({2, 3, 4}), Tensor(), Tensor()), {V{3, 4}, eps}, "two dims, no affine"},
      {in(mk({3, 5}, true), mk({5}), Tensor()), {V{5}, eps}, "non-contiguous, weight only"},
      {in(mk({6}), mk({6}), mk({6})), {V{6}, 0.1}, "1-d, large eps"},
      {in(mk({0, 4}), mk({4}), mk({4})), {V{4}, eps}, "zero-size batch"},
      {in(mk({4, 3}).t(), mk({4}), mk({4})), {V{4}, eps}, "transposed"},
  };
}

ReferenceFn row_norm_reference(bool centered) {
  return [centered](const std::vector<Tensor>& in, const Attrs& a) {
    const std::vector<int64_t> shape = nn_util::concrete_sizes(in[0]);
    const std::vector<double> x = nn_util::to_doubles(in[0]);
    int64_t n = 1;
    for (int64_t s : a.ints(0)) n *= s;
    std::vector<double> w, b, y(x.size());
    if (in[1].defined()) w = nn_util::to_doubles(in[1]);
    if (centered && in[2].defined()) b = nn_util::to_doubles(in[2]);
    const double eps = a.f(1);
    for (size_t r = 0; n > 0 && r < x.size() / n; ++r) {
      double m = 0, v = 0;
      for (int64_t i = 0; i < n; ++i) m += centered ? x[r * n + i] / n : 0;
      for (int64_t i = 0; i < n; ++i) v += (x[r * n + i] - m) * (x[r * n + i] - m) / n;
      for (int64_t i = 0; i < n; ++i) {
        double e = (x[r * n + i] - m) / std::sqrt(v + eps);
        if (!w.empty()) e *= w[i];
        if (!b.empty()) e += b[i];
        y[r * n + i] = e;
      }
    }
    return std::vector<Tensor>{nn_util::from_doubles(y, shape)};
  };
}

// layer_norm's inputs are input, weight, bias; rms_norm's input, weight.
std::vector<OpErrorSample> row_norm_error_samples(bool centered) {
  auto in = [centered](Tensor x, Tensor w) {
    std::vector<Tensor> v{std::move(x), std::move(w)};
    if (centered) v.emplace_back();
    return v;
  };
  auto ns = [](std::vector<int64_t> s) { return Attrs{std::move(s), 1e-5}; };
  const Tensor x = samples::make({3, 4}, kFloat32);
  return {
      {in(x, Tensor()), ns({}), "normalized_shape must have at least one dimension, got []",
       "empty normalized_shape"},
      {in(x.to(kInt64), Tensor()), ns({4}), "expected a floating point input, got int64",
       "integers"},
      {in(x, Tensor()), ns({5}),
       "Given normalized_shape=[5], expected an input whose last dims are [5], but got input of "
       "size [3, 4]",
       "input that does not end with normalized_shape"},
      {in(x, samples::make({5}, kFloat32)), ns({4}),
       "expected weight and bias of shape [4], got [5]", "weight's shape"},
  };
}

}  // namespace

KILN_REGISTER_OP(layer_norm)
    .schema(
        "layer_norm(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps) "
        "-> (Tensor out, Tensor mean, Tensor rstd)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      return row_norm_meta("layer_norm", in, a, 2);
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      row_norm_kernel(in, out, a.f(1), static_cast<int64_t>(a.ints(0).size()), true);
    })
    .save_inputs({0, 1})
    .save_outputs({1, 2})
    .backward([](const BackwardContext& c) { return row_norm_backward(c, true); })
    .materialize_grads(false)
    .samples([](ScalarType dt) { return row_norm_samples(dt, true); })
    .error_samples([] { return row_norm_error_samples(true); })
    .reference(row_norm_reference(true))
    .dtypes(nn_util::kNNDtypes)
    .lowering("extern:layer_norm");

KILN_REGISTER_OP(rms_norm)
    .schema(
        "rms_norm(Tensor input, int[] normalized_shape, Tensor? weight, float eps) "
        "-> (Tensor out, Tensor rstd)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      return row_norm_meta("rms_norm", in, a, 1);
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      row_norm_kernel(in, out, a.f(1), static_cast<int64_t>(a.ints(0).size()), false);
    })
    .save_inputs({0, 1})
    .save_outputs({1})
    .backward([](const BackwardContext& c) { return row_norm_backward(c, false); })
    .materialize_grads(false)
    .samples([](ScalarType dt) { return row_norm_samples(dt, false); })
    .error_samples([] { return row_norm_error_samples(false); })
    .reference(row_norm_reference(false))
    .dtypes(nn_util::kNNDtypes)
    .lowering("extern:rms_norm");

Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  static const OpDef& op = get_op("layer_norm");
  return call_op(op, {input, weight, bias}, {normalized_shape.vec(), eps})[0];
}

Tensor rms_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight,
                std::optional<double> eps) {
  static const OpDef& op = get_op("rms_norm");
  double e = 0;
  if (eps) {
    e = *eps;
  } else {
    switch (input.dtype()) {
      case kFloat64:
        e = std::numeric_limits<double>::epsilon();
        break;
      case kFloat16:
        e = 0.0009765625;
        break;
      case kBFloat16:
        e = 0.0078125;
        break;
      default:
        e = std::numeric_limits<float>::epsilon();
        break;
    }
  }
  return call_op(op, {input, weight}, {normalized_shape.vec(), e})[0];
}

}  // namespace kiln
