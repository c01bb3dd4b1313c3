// layer_norm_backward and rms_norm_backward: the fused gradients of layer_norm/rms_norm given
// their saved statistics (ATen's native_layer_norm_backward). One kernel pass per row computes
// the input gradient and the weight/bias column sums; their own backward is written with Kiln
// ops, so higher orders work too.
#include "kiln/backend/cpu/norm.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/nn/norm_util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

using nn_util::as_compute;

// Input positions: grad_out, input, [mean,] rstd, weight.
struct Slots {
  bool centered;
  int rstd() const { return centered ? 3 : 2; }
  int weight() const { return centered ? 4 : 3; }
  int outputs() const { return centered ? 3 : 2; }
};

const char* op_name(Slots s) { return s.centered ? "layer_norm_backward" : "rms_norm_backward"; }

std::vector<TensorSpec> backward_meta(Slots s, const std::vector<Tensor>& in, const Attrs& a) {
  const char* op = op_name(s);
  const Tensor& gy = in[0];
  const Tensor& x = in[1];
  const Tensor& w = in[s.weight()];
  const int64_t k = static_cast<int64_t>(a.ints(0).size());
  KILN_CHECK(k >= 1 && x.dim() >= k, op, ": expected input of rank at least ", k,
             " (normalized_shape ", IntArrayRef(a.ints(0)), "), got ", x.sym_sizes());
  KILN_CHECK(x.is_floating_point(), op, ": expected a floating point input, got ", x.dtype());
  KILN_CHECK(gy.sym_sizes() == x.sym_sizes(), op, ": grad_out of shape ", gy.sym_sizes(),
             " does not match input of shape ", x.sym_sizes());
  const SymShape sizes = x.sym_sizes();
  const SymShape normalized(sizes.end() - k, sizes.end());
  for (int64_t i = 0; i < k; ++i)
    KILN_CHECK(normalized[i] == a.ints(0)[i], op, ": input of shape ", x.sym_sizes(),
               " does not end with normalized_shape ", IntArrayRef(a.ints(0)));
  SymInt rows = 1;
  for (int64_t d = 0; d < x.dim() - k; ++d) rows *= sizes[d];
  for (int i = 2; i <= s.rstd(); ++i)
    KILN_CHECK(in[i].sym_numel() == rows, op, ": expected statistics with one value per row (",
               rows, "), got shape ", in[i].sym_sizes());
  if (w.defined())
    KILN_CHECK(w.sym_sizes() == normalized, op, ": expected weight of shape ",
               IntArrayRef(a.ints(0)), ", got ", w.sym_sizes());
  std::vector<TensorSpec> out{meta::spec(x.sym_sizes(), x.dtype(), x.device())};
  const ScalarType param_dtype = w.defined() ? w.dtype() : x.dtype();
  for (int i = 1; i < s.outputs(); ++i)
    out.push_back(meta::spec(normalized, param_dtype, x.device()));
  return out;
}

void backward_kernel(Slots s, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const Tensor gy = as_compute(in[0]);
  const Tensor x = as_compute(in[1]);
  const Tensor mean = s.centered ? as_compute(in[2]) : Tensor();
  const Tensor rstd = as_compute(in[s.rstd()]);
  const Tensor w = in[s.weight()].defined() ? as_compute(in[s.weight()]) : Tensor();
  const int64_t n = out[1].sym_numel().guard_int();
  const int64_t rows = n == 0 ? 0 : x.sym_numel().guard_int() / n;
  auto computed = [&](const Tensor& o) {
    return o.dtype() == x.dtype() ? o : empty(o.sym_sizes(), x.options());
  };
  std::vector<Tensor> result;
  for (const Tensor& o : out) result.push_back(computed(o));
  nn_util::visit_compute(x.dtype(), op_name(s), [&](auto tag) {
    using T = decltype(tag);
    cpu::row_norm_backward<T>(gy.data_ptr<T>(), x.data_ptr<T>(),
                              s.centered ? mean.data_ptr<T>() : nullptr, rstd.data_ptr<T>(),
                              w.defined() ? w.data_ptr<T>() : nullptr, rows, n,
                              result[0].data_ptr<T>(), result[1].data_ptr<T>(),
                              s.centered ? result[2].data_ptr<T>() : nullptr);
  });
  for (size_t i = 0; i < out.size(); ++i) nn_util::store(out[i], result[i]);
}

// The vector-Jacobian product of the op, per row with h = xhat, g = gy * w, a = mean(g * h),
// c = mean(g) (centered) and incoming gradients Gx, Gw, Gb of (dx, dw, db):
//   dL/dg = rstd * (Gx - h * mean(Gx * h) - mean(Gx))        (last term centered only)
//   dL/dh = -rstd * (Gx * a + g * mean(Gx * h)) + Gw * gy
// then through g = gy * w and h = (x - mean) * rstd.
std::vector<Tensor> backward_of_backward(Slots s, const BackwardContext& c) {
  const Tensor& gy = c.input(0);
  const Tensor& x = c.input(1);
  const Tensor& rstd = c.input(s.rstd());
  const Tensor& w = c.input(s.weight());
  const std::vector<int64_t> dims = nn_util::trailing_dims(x.dim(), c.attrs.ints(0).size());
  const Tensor centered_x = s.centered ? x - c.input(2) : x;
  const Tensor h = centered_x * rstd;
  const Tensor g = w.defined() ? gy * w : gy;
  const Tensor &gx = c.grad(0), &gw = c.grad(1), &gb = s.centered ? c.grad(2) : Tensor();
  Tensor dg, dh, d_rstd;
  if (gx.defined()) {
    const Tensor gx_h = (gx * h).mean(dims, true);
    const Tensor a = (g * h).mean(dims, true);
    Tensor inner = g - h * a;
    Tensor gx_part = gx - h * gx_h;
    if (s.centered) {
      inner = inner - g.mean(dims, true);
      gx_part = gx_part - gx.mean(dims, true);
    }
    dg = rstd * gx_part;
    dh = -rstd * (gx * a + g * gx_h);
    d_rstd = (gx * inner).sum(dims, true);
  }
  if (gw.defined()) dh = dh.defined() ? dh + gw * gy : gw * gy;
  std::vector<Tensor> grads(static_cast<size_t>(s.weight() + 1));
  Tensor& d_gy = grads[0];
  if (dg.defined()) d_gy = w.defined() ? dg * w : dg;
  if (gw.defined()) d_gy = d_gy.defined() ? d_gy + gw * h : gw * h;
  if (gb.defined()) d_gy = d_gy.defined() ? d_gy + gb : gb.expand(gy.sym_sizes());
  if (!dh.defined()) return grads;
  grads[1] = rstd * dh;
  if (s.centered) grads[2] = -grads[1].sum(dims, true);
  const Tensor dh_rstd = (dh * centered_x).sum(dims, true);
  grads[s.rstd()] = d_rstd.defined() ? d_rstd + dh_rstd : dh_rstd;
  if (w.defined() && dg.defined()) grads[s.weight()] = gy * dg;  // summed to weight's shape
  return grads;
}

std::vector<OpSample> backward_samples(Slots s, ScalarType dt) {
  using V = std::vector<int64_t>;
  auto mk = [&](V shape, bool nc = false) { return samples::make(shape, dt, -2, 2, nc); };
  auto stats = [&](V shape) { return samples::make(shape, dt, 0.5, 2); };  // rstd > 0
  auto in = [&](Tensor gy, Tensor x, V stat_shape, Tensor w) {
    std::vector<Tensor> v{gy, x};
    if (s.centered) v.push_back(mk(stat_shape));
    v.push_back(stats(stat_shape));
    v.push_back(w);
    return v;
  };
  return {
      {in(mk({2, 3, 4}), mk({2, 3, 4}), {2, 3, 1}, mk({4})), {V{4}}, "affine last dim"},
      {in(mk({2, 3, 4}), mk({2, 3, 4}), {2, 1, 1}, Tensor()), {V{3, 4}}, "two dims, no weight"},
      {in(mk({3, 5}, true), mk({3, 5}, true), {3, 1}, mk({5})), {V{5}}, "non-contiguous"},
      {in(mk({4, 3}).t(), mk({4, 3}).t(), {3, 1}, mk({4})), {V{4}}, "transposed"},
      {in(mk({1, 4}).expand({3, 4}), mk({3, 4}), {3, 1}, mk({4})),
       {V{4}},
       "broadcast grad",
       /*check_grad=*/false},  // finite differences would move every row of the expanded grad
      {in(mk({0, 4}), mk({0, 4}), {0, 1}, mk({4})), {V{4}}, "zero-size batch"},
  };
}

ReferenceFn backward_reference(Slots s) {
  return [s](const std::vector<Tensor>& in, const Attrs& a) {
    const std::vector<double> gy = nn_util::to_doubles(in[0]), x = nn_util::to_doubles(in[1]);
    const std::vector<double> rstd = nn_util::to_doubles(in[s.rstd()]);
    std::vector<double> mean(rstd.size(), 0.0), w;
    if (s.centered) mean = nn_util::to_doubles(in[2]);
    if (in[s.weight()].defined()) w = nn_util::to_doubles(in[s.weight()]);
    int64_t n = 1;
    for (int64_t v : a.ints(0)) n *= v;
    std::vector<double> dx(x.size()), dw(static_cast<size_t>(n)), db(static_cast<size_t>(n));
    for (size_t r = 0; r < rstd.size(); ++r) {
      double sum_gh = 0, sum_g = 0;
      for (int64_t i = 0; i < n; ++i) {
        const size_t e = r * n + i;
        const double g = gy[e] * (w.empty() ? 1.0 : w[i]);
        sum_gh += g * (x[e] - mean[r]) * rstd[r];
        sum_g += g;
      }
      for (int64_t i = 0; i < n; ++i) {
        const size_t e = r * n + i;
        const double h = (x[e] - mean[r]) * rstd[r];
        const double g = gy[e] * (w.empty() ? 1.0 : w[i]);
        dx[e] = rstd[r] * (g - h * sum_gh / n - (s.centered ? sum_g / n : 0.0));
        dw[i] += gy[e] * h;
        db[i] += gy[e];
      }
    }
    std::vector<Tensor> out{nn_util::from_doubles(dx, nn_util::concrete_sizes(in[1])),
                            nn_util::from_doubles(dw, a.ints(0))};
    if (s.centered) out.push_back(nn_util::from_doubles(db, a.ints(0)));
    return out;
  };
}

std::vector<OpErrorSample> backward_error_samples(Slots s) {
  using samples::make;
  // grad_out, input, [mean,] rstd, weight
  auto in = [s](Tensor gy, Tensor x, Tensor stat, Tensor w) {
    std::vector<Tensor> v{std::move(gy), std::move(x), stat};
    if (s.centered) v.push_back(stat);
    v.push_back(std::move(w));
    return v;
  };
  const Tensor x = make({3, 4}, kFloat32), stat = make({3, 1}, kFloat32);
  const Attrs ns{std::vector<int64_t>{4}};
  return {
      {in(make({4}, kFloat32), make({4}, kFloat32), stat, Tensor()),
       {std::vector<int64_t>{3, 4}},
       "expected input of rank at least 2 (normalized_shape [3, 4]), "
       "got [4]",
       "input of rank 1"},
      {in(x.to(kInt64), x.to(kInt64), stat, Tensor()), ns,
       "expected a floating point input, got int64", "integers"},
      {in(make({3, 5}, kFloat32), x, stat, Tensor()), ns,
       "grad_out of shape [3, 5] does not match input of shape [3, 4]", "grad_out's shape"},
      {in(x, x, stat, Tensor()),
       {std::vector<int64_t>{5}},
       "input of shape [3, 4] does not end with normalized_shape [5]",
       "normalized_shape"},
      {in(x, x, make({2}, kFloat32), Tensor()), ns,
       "expected statistics with one value per row (3), got shape [2]", "statistics"},
      {in(x, x, stat, make({5}, kFloat32)), ns, "expected weight of shape [4], got [5]",
       "weight's shape"},
  };
}

}  // namespace

KILN_REGISTER_OP(layer_norm_backward)
    .schema(
        "layer_norm_backward(Tensor grad_out, Tensor input, int[] normalized_shape, Tensor mean, "
        "Tensor rstd, Tensor? weight) -> (Tensor grad_input, Tensor grad_weight, Tensor "
        "grad_bias)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      return backward_meta({true}, in, a);
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
      backward_kernel({true}, in, out);
    })
    .backward([](const BackwardContext& c) { return backward_of_backward({true}, c); })
    .samples([](ScalarType dt) { return backward_samples({true}, dt); })
    .error_samples([] { return backward_error_samples({true}); })
    .reference(backward_reference({true}))
    .dtypes(nn_util::kNNDtypes)
    .lowering("extern:layer_norm_backward");

KILN_REGISTER_OP(rms_norm_backward)
    .schema(
        "rms_norm_backward(Tensor grad_out, Tensor input, int[] normalized_shape, Tensor rstd, "
        "Tensor? weight) -> (Tensor grad_input, Tensor grad_weight)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      return backward_meta({false}, in, a);
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
      backward_kernel({false}, in, out);
    })
    .backward([](const BackwardContext& c) { return backward_of_backward({false}, c); })
    .samples([](ScalarType dt) { return backward_samples({false}, dt); })
    .error_samples([] { return backward_error_samples({false}); })
    .reference(backward_reference({false}))
    .dtypes(nn_util::kNNDtypes)
    .lowering("extern:rms_norm_backward");

}  // namespace kiln
