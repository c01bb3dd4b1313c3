// The flash backend of scaled_dot_product_attention (PyTorch's
// _scaled_dot_product_flash_attention_for_cpu): the CPU kernels of
// kiln/backend/cpu/flash_attention.h behind two registry entries, the forward (output and each
// row's log-sum-exp) and its fused backward. Both compute in float for float32/bfloat16/float16
// and in double for float64.
#include <cmath>

#include "kiln/ops/meta.h"
#include "kiln/ops/nn/attention_kernels.h"
#include "kiln/ops/nn/attention_util.h"
#include "kiln/ops/nn/util.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

constexpr const char* kForward = "_scaled_dot_product_flash_attention_for_cpu";
constexpr const char* kBackward = "_scaled_dot_product_flash_attention_for_cpu_backward";

SymShape lse_shape(const Tensor& q) {
  SymShape s = q.sym_sizes();
  s.pop_back();
  return s;
}

// ---- forward: inputs query, key, value, attn_mask?; attrs is_causal, scale?, enable_gqa ----

std::vector<TensorSpec> forward_meta(const std::vector<Tensor>& in, const Attrs& a) {
  const Tensor& q = in[0];
  attention::check_inputs(kForward, q, in[1], in[2], in[3], a);
  return {meta::spec(attention::output_shape(q, in[2]), q.dtype(), q.device()),
          meta::spec(lse_shape(q), attention::compute_dtype(q), q.device())};
}

void forward_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  if (attention::flash_forward_bfloat16(in[0], in[1], in[2], in[3], a, out)) return;
  attention::flash_forward(in[0], in[1], in[2], in[3], a, out, kForward, attention::no_mod);
}

std::vector<Tensor> forward_backward(const BackwardContext& c) {
  static const OpDef& op = get_op(kBackward);
  const Tensor& mask = c.input(3);
  const bool mask_grad = c.needs_grad(3) && mask.is_floating_point();
  Tensor grad_out = c.grad(0);
  if (!grad_out.defined()) grad_out = zeros_like(c.output(0));
  std::vector<Tensor> g = call_op(
      op, {grad_out, c.grad(1), c.input(0), c.input(1), c.input(2), c.output(0), c.output(1), mask},
      {c.attrs.b(0), c.attrs[1], c.attrs.b(2), mask_grad});
  if (mask_grad)
    g[3] = sum_to_size(g[3], mask.sym_sizes());
  else
    g[3] = Tensor();
  return g;
}

std::vector<OpSample> forward_samples(ScalarType dt) {
  auto mk = [&](std::vector<int64_t> s, bool nc = false) {
    return samples::make(s, dt, -1, 1, nc);
  };
  const std::monostate none;
  const Attrs plain{false, none, false}, causal{true, none, false};
  // 70 queries and 135 keys cross the 64-row tiles; the random mask hides whole rows too.
  Tensor long_mask = samples::make({70, 135}, kFloat32, -1, 1) > 0.3;
  long_mask.narrow(0, 5, 2).fill_(false);
  Tensor float_mask = mk({2, 1, 70, 135});
  // Rows that see no key have a log-sum-exp of -inf, which finite differences cannot probe
  // (tests/nn/attention_test.cpp checks their gradients against the math backend).
  auto no_fd = [](OpSample s) {
    s.check_grad = false;
    return s;
  };
  return {
      {{mk({2, 3, 4}), mk({2, 5, 4}), mk({2, 5, 6}), Tensor()}, plain, "3-d"},
      {{mk({2, 3, 4, 2}).transpose(1, 2), mk({2, 5, 4, 2}).transpose(1, 2),
        mk({2, 5, 4, 3}).transpose(1, 2), Tensor()},
       plain,
       "head-split views"},
      {{mk({1, 2, 70, 3}), mk({1, 2, 135, 3}), mk({1, 2, 135, 2}), Tensor()},
       causal,
       "causal, tiles crossed, more keys than queries"},
      {{mk({1, 2, 135, 3}), mk({1, 2, 70, 3}), mk({1, 2, 70, 2}), Tensor()},
       causal,
       "causal, more queries than keys"},
      no_fd({{mk({2, 70, 3}), mk({2, 135, 3}), mk({2, 135, 3}), long_mask},
             plain,
             "broadcast bool mask with fully masked rows"}),
      {{mk({2, 2, 70, 3}), mk({2, 2, 135, 3}), mk({2, 2, 135, 3}), float_mask},
       {false, 0.3, false},
       "float mask broadcast over heads, scale"},
      {{mk({1, 4, 3, 2}), mk({1, 2, 5, 2}), mk({1, 2, 5, 3}), Tensor()},
       {false, none, true},
       "grouped-query"},
      {{mk({3, 4}, true), mk({5, 4}), mk({4, 5}).t(), Tensor()}, plain, "2-d, non-contiguous"},
      {{mk({3, 0}), mk({5, 0}), mk({5, 2}), Tensor()}, {false, 1.0, false}, "zero head dim"},
      no_fd({{mk({2, 3, 4}), mk({2, 0, 4}), mk({2, 0, 6}), Tensor()}, plain, "no keys"}),
  };
}

std::vector<Tensor> forward_reference(const std::vector<Tensor>& in, const Attrs& a) {
  attention::Reference r = attention::reference(in[0], in[1], in[2], in[3], Tensor(), a);
  return {r.out, r.lse};
}

std::vector<OpErrorSample> forward_error_samples() {
  auto t = [](std::vector<int64_t> s, ScalarType dt = kFloat32) {
    return samples::make(std::move(s), dt);
  };
  const std::monostate none;
  const Tensor q = t({2, 3, 4}), k = t({2, 5, 4}), v = t({2, 5, 4}), no;
  return {
      {{q, t({2, 5, 3}), v, no},
       {false, none, false},
       "same embedding size, got 4 and 3",
       "embedding"},
      {{q, k, v, t({3, 5})},
       {true, none, false},
       "Explicit attn_mask should not be set when is_causal=True",
       "mask and causal"},
      {{q, k, v, t({3, 5}, kFloat64)},
       {false, none, false},
       "expected a bool mask or a mask of the query's dtype float32, got float64",
       "mask dtype"},
  };
}

// ---- backward: grad_out, grad_logsumexp?, query, key, value, out, logsumexp, attn_mask?;
// attrs is_causal, scale?, enable_gqa, mask_grad (output 3 is the gradient of the scores, shaped
// as the attention weights, when set; empty otherwise) ----

std::vector<TensorSpec> backward_meta(const std::vector<Tensor>& in, const Attrs& a) {
  const Tensor &go = in[0], &q = in[2], &k = in[3], &v = in[4], &mask = in[7];
  const char* op = kBackward;
  const SymShape probs = attention::check_inputs(op, q, k, v, mask, a);
  const SymShape out = attention::output_shape(q, v);
  KILN_CHECK(go.sym_sizes() == SymIntArrayRef(out) && in[5].sym_sizes() == SymIntArrayRef(out), op,
             ": expected grad_out and out of the output's shape ", SymIntArrayRef(out), ", got ",
             go.sym_sizes(), " and ", in[5].sym_sizes());
  const SymShape lse = lse_shape(q);
  KILN_CHECK(in[6].sym_sizes() == SymIntArrayRef(lse) &&
                 (!in[1].defined() || in[1].sym_sizes() == SymIntArrayRef(lse)),
             op, ": expected logsumexp (and its gradient) of shape ", SymIntArrayRef(lse), ", got ",
             in[6].sym_sizes());
  KILN_CHECK(!a.b(3) || (mask.defined() && mask.is_floating_point()), op,
             ": mask_grad needs a floating attn_mask");
  const SymShape scores = a.b(3) ? probs : SymShape{SymInt(0)};
  return {meta::spec(q.sym_sizes(), q.dtype(), q.device()),
          meta::spec(k.sym_sizes(), k.dtype(), k.device()),
          meta::spec(v.sym_sizes(), v.dtype(), v.device()),
          meta::spec(scores, q.dtype(), q.device())};
}

void backward_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  if (attention::flash_backward_bfloat16(in, in[7], a, a.b(3), out)) return;
  attention::flash_backward(in, in[7], a, a.b(3), out, kBackward, attention::no_mod);
}

std::vector<OpSample> backward_samples(ScalarType dt) {
  static const OpDef& forward = get_op(kForward);
  std::vector<OpSample> result;
  for (const OpSample& s : forward_samples(dt)) {
    const Tensor& mask = s.inputs[3];
    const std::vector<Tensor> fwd = call_op(forward, s.inputs, s.attrs);
    const bool mask_grad = mask.defined() && mask.is_floating_point();
    const Tensor grad_out = samples::make(nn_util::concrete_sizes(fwd[0]), dt, -1, 1);
    const Tensor grad_lse = samples::make(nn_util::concrete_sizes(fwd[1]), fwd[1].dtype(), -1, 1)
                                .masked_fill(fwd[1] == -INFINITY, 0);
    OpSample b{{grad_out, grad_lse, s.inputs[0], s.inputs[1], s.inputs[2], fwd[0], fwd[1], mask},
               {s.attrs.b(0), s.attrs[1], s.attrs.b(2), mask_grad},
               s.desc};
    b.check_grad = false;  // not differentiable: see backward_backward
    result.push_back(std::move(b));
  }
  return result;
}

std::vector<Tensor> backward_reference(const std::vector<Tensor>& in, const Attrs& a) {
  attention::ReferenceGradients r =
      attention::reference_backward(in[2], in[3], in[4], in[7], in[0], in[1], a);
  return {r.q, r.k, r.v, a.b(3) ? r.scores : zeros({0}, TensorOptions(kFloat64))};
}

std::vector<Tensor> backward_backward(const BackwardContext&) {
  detail::throw_error(detail::str_cat(
      kBackward,
      ": double backward through the flash attention kernel is not supported; select the "
      "math backend (nn::attention::sdpa_kernel({SDPBackend::math})) for higher-order "
      "gradients"));
}

}  // namespace

KILN_REGISTER_OP(_scaled_dot_product_flash_attention_for_cpu)
    .schema(
        "_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value, "
        "Tensor? attn_mask, bool is_causal=False, float? scale=None, bool enable_gqa=False) -> "
        "(Tensor output, Tensor logsumexp)")
    .meta(forward_meta)
    .cpu(forward_kernel)
    .save_outputs(true)
    .backward(forward_backward)
    .first_order_only()
    .samples(forward_samples)
    .error_samples(forward_error_samples)
    .reference(forward_reference)
    .dtypes({kFloat64, kFloat32, kBFloat16, kFloat16})
    .lowering("extern:_scaled_dot_product_flash_attention_for_cpu");

KILN_REGISTER_OP(_scaled_dot_product_flash_attention_for_cpu_backward)
    .schema(
        "_scaled_dot_product_flash_attention_for_cpu_backward(Tensor grad_out, Tensor? "
        "grad_logsumexp, Tensor query, Tensor key, Tensor value, Tensor out, Tensor logsumexp, "
        "Tensor? attn_mask, bool is_causal=False, float? scale=None, bool enable_gqa=False, bool "
        "mask_grad=False) -> (Tensor grad_query, Tensor grad_key, Tensor grad_value, Tensor "
        "grad_scores)")
    .meta(backward_meta)
    .cpu(backward_kernel)
    .backward(backward_backward)
    .samples(backward_samples)
    .reference(backward_reference)
    .dtypes({kFloat64, kFloat32, kBFloat16})
    .lowering("extern:_scaled_dot_product_flash_attention_for_cpu_backward");

}  // namespace kiln
