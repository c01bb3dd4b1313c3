#include "kiln/ops/nn/attention_util.h"

#include <cmath>

#include "kiln/ops/meta.h"
#include "kiln/ops/nn/util.h"

namespace kiln::attention {

double resolve_scale(const Tensor& q, const Attrs& a) {
  return a.is_none(1) ? 1.0 / std::sqrt(static_cast<double>(q.sym_size(-1).guard_int())) : a.f(1);
}

SymShape check_inputs(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                      const Tensor& mask, const Attrs& a) {
  KILN_CHECK(q.dim() >= 2 && k.dim() == q.dim() && v.dim() == q.dim(), op,
             ": expected query, key and value of the same rank >= 2, got ", q.sym_sizes(), ", ",
             k.sym_sizes(), " and ", v.sym_sizes());
  KILN_CHECK(q.is_floating_point() && k.dtype() == q.dtype() && v.dtype() == q.dtype(), op,
             ": expected query, key and value of the same floating dtype, got ", q.dtype(), ", ",
             k.dtype(), " and ", v.dtype());
  KILN_CHECK(q.sym_size(-1) == k.sym_size(-1), op,
             ": query and key must have the same embedding size, got ", q.sym_size(-1), " and ",
             k.sym_size(-1));
  KILN_CHECK(k.sym_size(-2) == v.sym_size(-2), op,
             ": key and value must have the same sequence length, got ", k.sym_size(-2), " and ",
             v.sym_size(-2));
  for (int64_t d = 0; d < q.dim() - 2; ++d) {
    const bool heads = d == q.dim() - 3;
    if (heads && a.b(2) && k.sym_size(d) != q.sym_size(d)) {
      KILN_CHECK(k.sym_size(d) == v.sym_size(d) && q.sym_size(d) % k.sym_size(d) == 0, op,
                 ": with enable_gqa the number of query heads (", q.sym_size(d),
                 ") must be a multiple of the number of key/value heads (", k.sym_size(d), ")");
      continue;
    }
    KILN_CHECK(k.sym_size(d) == q.sym_size(d) && v.sym_size(d) == q.sym_size(d), op,
               ": query, key and value must agree in their batch dims, got ", q.sym_sizes(), ", ",
               k.sym_sizes(), " and ", v.sym_sizes(),
               heads ? " (pass enable_gqa=true for fewer key/value heads)" : "");
  }
  SymShape probs = q.sym_sizes();
  probs.back() = k.sym_size(-2);
  if (mask.defined()) {
    KILN_CHECK(!a.b(0), op,
               ": Explicit attn_mask should not be set when is_causal=True (got a mask of shape ",
               mask.sym_sizes(), ")");
    KILN_CHECK(mask.dtype() == kBool || mask.dtype() == q.dtype(), op,
               ": expected a bool mask or a mask of the query's dtype ", q.dtype(), ", got ",
               mask.dtype());
    meta::broadcast_shapes(op, {mask.sym_sizes(), probs});
  }
  return probs;
}

SymShape output_shape(const Tensor& q, const Tensor& v) {
  SymShape out = q.sym_sizes();
  out.back() = v.sym_size(-1);
  return out;
}

Reference reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask_in,
                    const Tensor& noise_in, const Attrs& a) {
  const int64_t l = q.sym_size(-2).guard_int(), e = q.sym_size(-1).guard_int();
  const int64_t s = k.sym_size(-2).guard_int(), ev = v.sym_size(-1).guard_int();
  int64_t bq = 1;
  for (int64_t d = 0; d < q.dim() - 2; ++d) bq *= q.sym_size(d).guard_int();
  const int64_t hq = q.dim() >= 3 ? q.sym_size(-3).guard_int() : 1;
  const int64_t hk = k.dim() >= 3 ? k.sym_size(-3).guard_int() : 1;
  const double scale = resolve_scale(q, a);
  const std::vector<double> qd = nn_util::to_doubles(q), kd = nn_util::to_doubles(k),
                            vd = nn_util::to_doubles(v);
  SymShape probs_shape = q.sym_sizes();
  probs_shape.back() = k.sym_size(-2);
  std::vector<double> mask, noise;
  if (mask_in.defined()) mask = nn_util::to_doubles(mask_in.expand(probs_shape));
  if (noise_in.defined()) noise = nn_util::to_doubles(noise_in.expand(probs_shape));
  std::vector<double> out(bq * l * ev, 0.0), probs(bq * l * s, 0.0), lse(bq * l, -INFINITY);
  for (int64_t b = 0; b < bq; ++b) {
    const int64_t bk = (b / hq) * hk + (b % hq) / (hq / hk);
    for (int64_t i = 0; i < l; ++i) {
      std::vector<double> sc(s);
      double mx = -INFINITY;
      for (int64_t j = 0; j < s; ++j) {
        double dot = 0;
        for (int64_t t = 0; t < e; ++t) dot += qd[(b * l + i) * e + t] * kd[(bk * s + j) * e + t];
        sc[j] = dot * scale;
        const size_t m = (b * l + i) * s + j;
        if (a.b(0) && j > i) sc[j] = -INFINITY;
        if (!mask.empty())
          sc[j] = mask_in.dtype() == kBool ? (mask[m] != 0 ? sc[j] : -INFINITY) : sc[j] + mask[m];
        mx = std::max(mx, sc[j]);
      }
      if (mx == -INFINITY) continue;
      double sum = 0;
      for (int64_t j = 0; j < s; ++j) sum += std::exp(sc[j] - mx);
      lse[b * l + i] = mx + std::log(sum);
      for (int64_t j = 0; j < s; ++j) {
        const size_t m = (b * l + i) * s + j;
        probs[m] = std::exp(sc[j] - mx) / sum;
        const double pd = probs[m] * (noise.empty() ? 1.0 : noise[m]);
        for (int64_t t = 0; t < ev; ++t)
          out[(b * l + i) * ev + t] += pd * vd[(bk * s + j) * ev + t];
      }
    }
  }
  std::vector<int64_t> out_shape = nn_util::concrete_sizes(q);
  out_shape.back() = ev;
  std::vector<int64_t> lse_shape = nn_util::concrete_sizes(q);
  lse_shape.pop_back();
  return {nn_util::from_doubles(out, out_shape),
          nn_util::from_doubles(probs, SymIntArrayRef(probs_shape).vec()),
          nn_util::from_doubles(lse, lse_shape)};
}

ReferenceGradients reference_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const Tensor& mask, const Tensor& grad_out,
                                      const Tensor& grad_lse, const Attrs& a) {
  const Reference r = reference(q, k, v, mask, Tensor(), a);
  const int64_t l = q.sym_size(-2).guard_int(), e = q.sym_size(-1).guard_int();
  const int64_t s = k.sym_size(-2).guard_int(), ev = v.sym_size(-1).guard_int();
  const int64_t rows = l == 0 ? 0 : r.lse.numel() / l;
  const int64_t hq = q.dim() >= 3 ? q.sym_size(-3).guard_int() : 1;
  const int64_t hk = k.dim() >= 3 ? k.sym_size(-3).guard_int() : 1;
  const double scale = resolve_scale(q, a);
  const std::vector<double> qd = nn_util::to_doubles(q), kd = nn_util::to_doubles(k),
                            vd = nn_util::to_doubles(v), p = nn_util::to_doubles(r.probs),
                            go = nn_util::to_doubles(grad_out);
  std::vector<double> glse(rows * l, 0.0);
  if (grad_lse.defined()) glse = nn_util::to_doubles(grad_lse);
  std::vector<double> dq(qd.size(), 0.0), dk(kd.size(), 0.0), dv(vd.size(), 0.0), ds(p.size(), 0.0);
  for (int64_t b = 0; b < rows; ++b) {
    const int64_t bk = (b / hq) * hk + (b % hq) / (hq / hk);
    for (int64_t i = 0; i < l; ++i) {
      std::vector<double> dp(s, 0.0);
      double delta = -glse[b * l + i];
      for (int64_t j = 0; j < s; ++j) {
        const double pij = p[(b * l + i) * s + j];
        for (int64_t t = 0; t < ev; ++t) {
          dp[j] += go[(b * l + i) * ev + t] * vd[(bk * s + j) * ev + t];
          dv[(bk * s + j) * ev + t] += pij * go[(b * l + i) * ev + t];
        }
        delta += pij * dp[j];
      }
      for (int64_t j = 0; j < s; ++j) {
        const double g = p[(b * l + i) * s + j] * (dp[j] - delta);
        ds[(b * l + i) * s + j] = g;
        for (int64_t t = 0; t < e; ++t) {
          dq[(b * l + i) * e + t] += scale * g * kd[(bk * s + j) * e + t];
          dk[(bk * s + j) * e + t] += scale * g * qd[(b * l + i) * e + t];
        }
      }
    }
  }
  return {nn_util::from_doubles(dq, nn_util::concrete_sizes(q)),
          nn_util::from_doubles(dk, nn_util::concrete_sizes(k)),
          nn_util::from_doubles(dv, nn_util::concrete_sizes(v)),
          nn_util::from_doubles(ds, nn_util::concrete_sizes(r.probs))};
}

}  // namespace kiln::attention
