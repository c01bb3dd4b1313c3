// scaled_dot_product_attention, math implementation: one entry whose kernel runs the batched
// products and the softmax, and whose backward is written with Kiln ops. Outputs: the attention
// result and the attention probabilities (before dropout; fully masked rows are 0, as PyTorch's
// math path gives). Dropout arrives as a precomputed noise tensor (0 or 1/(1-p)), so the entry
// itself is deterministic.
#include <algorithm>
#include <cmath>
#include <string>

#include "kiln/ops/linalg/util.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/nn/attention_backend.h"
#include "kiln/ops/nn/attention_util.h"
#include "kiln/ops/nn/util.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

// inputs: query, key, value, attn_mask?, dropout_noise?; attrs: is_causal, scale?, enable_gqa.

// a @ b for operands with the same batch dims, without the copy matmul makes of head-split
// views (whose batch dims do not flatten into one stride): linalg::gemm_into multiplies them in
// place. Where autograd must record the product, or the operands are not plain CPU batches, it
// is matmul.
Tensor batched_product(const Tensor& a, const Tensor& b) {
  const int64_t nd = a.dim();
  bool direct = nd >= 3 && b.dim() == nd && !GradMode::is_enabled() && a.is_cpu() && b.is_cpu() &&
                a.dtype() == b.dtype() && !a.is_meta() && !b.is_meta();  // not traced
  for (int64_t d = 0; direct && d < nd - 2; ++d) direct = a.sym_size(d) == b.sym_size(d);
  if (!direct) return matmul(a, b);
  std::vector<int64_t> shape = a.sym_sizes().vec();
  shape.back() = b.sym_size(-1).guard_int();
  Tensor out = empty(shape, a.options());
  linalg::gemm_into(out, a, b, 1, 0);
  return out;
}

// Key/value heads repeated so that each query head has its own (grouped-query attention).
Tensor expand_heads(const Tensor& kv, const Tensor& q) {
  if (kv.dim() < 3 || kv.sym_size(-3) == q.sym_size(-3)) return kv;
  return kv.repeat_interleave(q.sym_size(-3).guard_int() / kv.sym_size(-3).guard_int(), -3);
}

std::vector<TensorSpec> sdpa_meta(const std::vector<Tensor>& in, const Attrs& a) {
  const Tensor &q = in[0], &noise = in[4];
  const char* op = "scaled_dot_product_attention";
  const SymShape probs = attention::check_inputs(op, q, in[1], in[2], in[3], a);
  KILN_CHECK(!noise.defined() || noise.sym_sizes() == SymIntArrayRef(probs), op,
             ": expected dropout_noise of the attention's shape ", SymIntArrayRef(probs), ", got ",
             noise.sym_sizes());
  return {meta::spec(attention::output_shape(q, in[2]), q.dtype(), q.device()),
          meta::spec(probs, q.dtype(), q.device())};
}

// The masked, scaled scores' softmax; rows with no allowed key are 0.
Tensor attention_probs(const Tensor& q, const Tensor& k, const Tensor& mask, const Attrs& a) {
  Tensor scores = batched_product(q, k.transpose(-2, -1)) * attention::resolve_scale(q, a);
  if (a.b(0)) {
    const int64_t l = q.sym_size(-2).guard_int(), s = k.sym_size(-2).guard_int();
    Tensor masked = ones({l, s}, TensorOptions(kBool).device(q.device())).triu(1);
    // The causal mask is aligned top-left, so every row keeps key 0 and none is fully masked.
    return scores.masked_fill(masked, -INFINITY).softmax(-1);
  }
  if (!mask.defined()) return scores.softmax(-1);
  scores =
      mask.dtype() == kBool ? scores.masked_fill(mask.logical_not(), -INFINITY) : scores + mask;
  return scores.softmax(-1).masked_fill(scores.amax({-1}, true) == -INFINITY, 0);
}

// Sums a gradient of repeated key/value heads back onto the shared heads.
Tensor fold_heads(const Tensor& g, const Tensor& kv) {
  if (kv.dim() < 3 || g.sym_size(-3) == kv.sym_size(-3)) return g;
  const SymInt groups = g.sym_size(-3) / kv.sym_size(-3);
  return g.unflatten(-3, {kv.sym_size(-3), groups}).sum(IntArrayRef(int64_t{-3}));
}

std::vector<Tensor> sdpa_backward(const BackwardContext& c) {
  const Tensor &q = c.input(0), &noise = c.input(4);
  const Tensor k = expand_heads(c.input(1), q), v = expand_heads(c.input(2), q);
  const Tensor& p = c.output(1);
  const double scale = attention::resolve_scale(q, c.attrs);
  std::vector<Tensor> grads(5);
  Tensor dp = c.grad(1);
  if (c.grad(0).defined()) {
    const Tensor& go = c.grad(0);
    const Tensor pd = noise.defined() ? p * noise : p;
    if (c.needs_grad(2))
      grads[2] = fold_heads(batched_product(pd.transpose(-2, -1), go), c.input(2));
    const Tensor dpd = batched_product(go, v.transpose(-2, -1));
    if (c.needs_grad(4)) grads[4] = dpd * p;
    const Tensor from_out = noise.defined() ? dpd * noise : dpd;
    dp = dp.defined() ? dp + from_out : from_out;
  }
  if (!dp.defined()) return grads;
  const Tensor ds = p * (dp - (dp * p).sum(IntArrayRef(int64_t{-1}), true));
  if (c.needs_grad(0)) grads[0] = batched_product(ds, k) * scale;
  if (c.needs_grad(1))
    grads[1] = fold_heads(batched_product(ds.transpose(-2, -1), q) * scale, c.input(1));
  if (c.needs_grad(3) && c.input(3).is_floating_point()) grads[3] = ds;
  return grads;
}

std::vector<OpSample> sdpa_samples(ScalarType dt) {
  auto mk = [&](std::vector<int64_t> s, bool nc = false) {
    return samples::make(s, dt, -1, 1, nc);
  };
  const std::monostate none;
  Tensor bool_mask = tensor(std::vector<double>{1, 0, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1})
                         .view({3, 5})
                         .to(kBool);
  Tensor noise =
      tensor(std::vector<double>{2, 0, 2, 2, 0, 0, 2, 2, 2, 2, 2, 2, 0, 2, 2}).view({3, 5}).to(dt);
  return {
      {{mk({2, 3, 4}), mk({2, 5, 4}), mk({2, 5, 6}), Tensor(), Tensor()},
       {false, none, false},
       "3-d"},
      {{mk({2, 3, 4, 2}).transpose(1, 2), mk({2, 5, 4, 2}).transpose(1, 2),
        mk({2, 5, 4, 3}).transpose(1, 2), Tensor(), Tensor()},
       {false, none, false},
       "head-split views (batch dims that do not flatten)"},
      {{mk({1, 2, 4, 3}), mk({1, 2, 4, 3}), mk({1, 2, 4, 3}), Tensor(), Tensor()},
       {true, none, false},
       "causal"},
      {{mk({2, 3, 4}), mk({2, 5, 4}), mk({2, 5, 4}), bool_mask, Tensor()},
       {false, none, false},
       "broadcast bool mask"},
      {{mk({2, 3, 4}), mk({2, 5, 4}), mk({2, 5, 4}), mk({2, 3, 5}), Tensor()},
       {false, 0.3, false},
       "float mask, scale"},
      {{mk({1, 4, 3, 2}), mk({1, 2, 5, 2}), mk({1, 2, 5, 3}), Tensor(), Tensor()},
       {false, none, true},
       "grouped-query"},
      {{mk({3, 4}, true), mk({5, 4}), mk({4, 5}).t(), Tensor(), noise},
       {false, none, false},
       "2-d, non-contiguous, dropout noise"},
      {{mk({3, 0}), mk({5, 0}), mk({5, 2}), Tensor(), Tensor()},
       {false, 1.0, false},
       "zero embedding size"},
  };
}

std::vector<Tensor> sdpa_reference(const std::vector<Tensor>& in, const Attrs& a) {
  attention::Reference r = attention::reference(in[0], in[1], in[2], in[3], in[4], a);
  return {r.out, r.probs};
}

std::vector<OpErrorSample> sdpa_error_samples() {
  auto t = [](std::vector<int64_t> s, ScalarType dt = kFloat32) {
    return samples::make(std::move(s), dt);
  };
  const std::monostate none;
  const Attrs plain{false, none, false}, causal{true, none, false}, gqa{false, none, true};
  const Tensor q = t({2, 3, 4}), k = t({2, 5, 4}), v = t({2, 5, 4}), no;
  return {
      {{t({3}), k, v, no, no},
       plain,
       "same rank >= 2, got [3], [2, 5, 4] and [2, 5, 4]",
       "query of rank 1"},
      {{q, t({2, 5, 4}, kFloat64), v, no, no},
       plain,
       "same floating dtype, got float32, float64 and float32",
       "key's dtype"},
      {{q.to(kInt64), k.to(kInt64), v.to(kInt64), no, no},
       plain,
       "same floating dtype, got int64, int64 and int64",
       "integers"},
      {{q, t({2, 5, 3}), v, no, no}, plain, "same embedding size, got 4 and 3", "embedding"},
      {{q, k, t({2, 6, 4}), no, no}, plain, "same sequence length, got 5 and 6", "sequence"},
      {{t({1, 3, 3, 2}), t({1, 2, 5, 2}), t({1, 2, 5, 2}), no, no},
       gqa,
       "the number of query heads (3) must be a multiple of the number of key/value heads (2)",
       "grouped-query heads"},
      {{q, t({3, 5, 4}), t({3, 5, 4}), no, no},
       plain,
       "must agree in their batch dims, got [2, 3, 4], [3, 5, 4] and [3, 5, 4]",
       "batch"},
      {{q, k, v, t({3, 5}), no},
       causal,
       "Explicit attn_mask should not be set when is_causal=True (got a mask of shape [3, 5])",
       "mask and causal"},
      {{q, k, v, t({3, 5}, kInt64), no},
       plain,
       "expected a bool mask or a mask of the query's dtype float32, got int64",
       "mask dtype"},
      {{q, k, v, t({4, 5}), no},
       plain,
       "shapes [4, 5] and [2, 3, 5] cannot be broadcast together",
       "mask shape"},
      {{q, k, v, no, t({2, 3, 4})},
       plain,
       "expected dropout_noise of the attention's shape [2, 3, 5], got [2, 3, 4]",
       "noise shape"},
  };
}

}  // namespace

KILN_REGISTER_OP(scaled_dot_product_attention)
    .schema(
        "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, "
        "Tensor? dropout_noise, bool is_causal=False, float? scale=None, bool enable_gqa=False) "
        "-> (Tensor out, Tensor attn)")
    .meta(sdpa_meta)
    .cpu(attention::math_kernel)
    .save_outputs({1})  // the attention weights
    .backward(sdpa_backward)
    .materialize_grads(false)
    .samples(sdpa_samples)
    .error_samples(sdpa_error_samples)
    .reference(sdpa_reference)
    .dtypes(nn_util::kNNDtypes)
    .lowering("extern:scaled_dot_product_attention");

namespace {

using nn::attention::SDPBackend;

// Why `b` cannot run these inputs on the CPU, or "" when it can.
std::string unfit(SDPBackend b, const Tensor& q, const Tensor& mask, double dropout_p) {
  if (b == SDPBackend::math) return "";
  if (b != SDPBackend::flash_attention) return "not available on the CPU";
  if (q.device().type() != kCPU)
    return detail::str_cat("the flash kernel runs on the CPU, not on ", q.device());
  const ScalarType dt = q.dtype();
  if (dropout_p > 0) return "dropout_p > 0 is not supported";
  if (dt != kFloat32 && dt != kBFloat16 && dt != kFloat16 && dt != kFloat64)
    return detail::str_cat("query of dtype ", dt, " is not supported");
  if (mask.defined() && mask.dtype() != kBool && mask.dtype() != dt)
    return detail::str_cat("attn_mask of dtype ", mask.dtype(), " is not supported");
  return "";
}

}  // namespace

namespace attention {
void math_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  NoGradGuard no_grad;
  const Tensor& q = in[0];
  const Tensor p = attention_probs(q, expand_heads(in[1], q), in[3], a);
  const Tensor pd = in[4].defined() ? p * in[4] : p;
  nn_util::store(out[0], batched_product(pd, expand_heads(in[2], q)));
  nn_util::store(out[1], p);
}
}  // namespace attention

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale, bool enable_gqa) {
  KILN_CHECK(dropout_p >= 0 && dropout_p <= 1,
             "scaled_dot_product_attention: dropout_p must be in [0, 1], got ", dropout_p);
  const Attrs attrs{is_causal, opt_attr(scale), enable_gqa};
  const auto& enabled = nn::attention::enabled_backends();
  for (SDPBackend b : enabled) {
    if (!unfit(b, query, attn_mask, dropout_p).empty()) continue;
    if (b == SDPBackend::flash_attention) {
      static const OpDef& flash = get_op("_scaled_dot_product_flash_attention_for_cpu");
      return call_op(flash, {query, key, value, attn_mask}, attrs)[0];
    }
    static const OpDef& math = get_op("scaled_dot_product_attention");
    Tensor noise;
    if (dropout_p > 0) {
      SymShape shape = query.sym_sizes();
      shape.back() = key.sym_size(-2);
      noise = dropout_p >= 1
                  ? zeros(shape, query.options())
                  : bernoulli(zeros(shape, query.options()), 1 - dropout_p) / (1 - dropout_p);
    }
    return call_op(math, {query, key, value, attn_mask, noise}, attrs)[0];
  }
  std::string reasons;
  for (SDPBackend b : {SDPBackend::flash_attention, SDPBackend::math}) {
    const bool on = std::find(enabled.begin(), enabled.end(), b) != enabled.end();
    reasons +=
        detail::str_cat(reasons.empty() ? "" : "; ", nn::attention::backend_name(b), ": ",
                        on ? unfit(b, query, attn_mask, dropout_p) : "not enabled by sdpa_kernel");
  }
  detail::throw_error(detail::str_cat(
      "scaled_dot_product_attention: no enabled backend can run these inputs (", reasons, ")"));
}

}  // namespace kiln
