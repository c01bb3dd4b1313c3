// The flash backend of scaled_dot_product_attention (PyTorch's
// _scaled_dot_product_flash_attention_for_cpu): the CPU kernels of
// kiln/backend/cpu/flash_attention.h behind two registry entries, the forward (output and each
// row's log-sum-exp) and its fused backward. Both compute in float for float32/bfloat16/float16
// and in double for float64.
#include <cmath>

#include "kiln/backend/cpu/flash_attention.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/nn/attention_util.h"
#include "kiln/ops/nn/util.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

constexpr const char* kForward = "_scaled_dot_product_flash_attention_for_cpu";
constexpr const char* kBackward = "_scaled_dot_product_flash_attention_for_cpu_backward";

int64_t size_of(const Tensor& t, int64_t d) { return t.sym_size(d).guard_int(); }

// [..., S, D] as the kernel's key blocks [..., ceil(S / block), D, block] in the compute dtype,
// zero-padded: each tile of K^T (or V^T) is then one dense D x block matrix.
Tensor key_blocks(const Tensor& t) {
  const int64_t s = size_of(t, -2), d = size_of(t, -1), block = cpu::kFlashKeyBlock;
  const int64_t blocks = (s + block - 1) / block;
  Tensor padded = constant_pad_nd(t, {0, 0, 0, blocks * block - s});
  std::vector<int64_t> shape = nn_util::concrete_sizes(t);
  shape.pop_back();
  shape.back() = blocks;
  shape.push_back(block);
  shape.push_back(d);
  return nn_util::as_compute(padded.reshape(shape).transpose(-2, -1));
}

// The kernel's view of the inputs: dense copies in the compute dtype (only where the input is
// not one already) and the sizes of FlashAttention.
struct Operands {
  Tensor q, k, k_t, v, v_t, mask;
  int64_t batch = 1, heads = 1, kv_heads = 1, q_len, kv_len, head_dim, value_dim;
  double scale;
  bool causal;
  std::vector<int64_t> mask_offset;
  int64_t mask_row_stride = 0, mask_col_stride = 0;

  Operands(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask,
           const Attrs& a, bool backward)
      : q(nn_util::as_compute(query)),
        k(nn_util::as_compute(key)),
        k_t(key_blocks(key)),
        v(nn_util::as_compute(value)),
        q_len(size_of(query, -2)),
        kv_len(size_of(key, -2)),
        head_dim(size_of(query, -1)),
        value_dim(size_of(value, -1)),
        scale(attention::resolve_scale(query, a)),
        causal(a.b(0)) {
    if (backward) v_t = key_blocks(value);
    if (query.dim() >= 3) {
      heads = size_of(query, -3);
      kv_heads = size_of(key, -3);
    }
    int64_t rows = 1;
    for (int64_t d = 0; d < query.dim() - 2; ++d) rows *= size_of(query, d);
    batch = heads == 0 ? 0 : rows / heads;
    if (attn_mask.defined()) describe_mask(query, attn_mask, rows);
  }

  // The mask as additive values in the compute dtype, expanded to the weights' shape without a
  // copy: each query row's offset, and the row and column strides.
  void describe_mask(const Tensor& query, const Tensor& attn_mask, int64_t rows) {
    const ScalarType dt = q.dtype();
    mask = attn_mask.dtype() == kBool
               ? full(attn_mask.sym_sizes(), -INFINITY, TensorOptions(dt)).masked_fill(attn_mask, 0)
               : nn_util::as_compute(attn_mask);
    std::vector<int64_t> shape = nn_util::concrete_sizes(query);
    shape.back() = kv_len;
    const Tensor expanded = mask.expand(shape);
    const int64_t nd = expanded.dim();
    mask_row_stride = expanded.stride(nd - 2);
    mask_col_stride = expanded.stride(nd - 1);
    mask_offset.assign(rows, 0);
    for (int64_t n = 0; n < rows; ++n)
      for (int64_t d = nd - 3, rest = n; d >= 0; --d) {
        mask_offset[n] += rest % shape[d] * expanded.stride(d);
        rest /= shape[d];
      }
  }

  template <class T>
  cpu::FlashAttention<T> problem() const {
    cpu::FlashAttention<T> p;
    p.batch = batch;
    p.heads = heads;
    p.kv_heads = kv_heads;
    p.q_len = q_len;
    p.kv_len = kv_len;
    p.head_dim = head_dim;
    p.value_dim = value_dim;
    p.scale = static_cast<T>(scale);
    p.causal = causal;
    p.q = q.data_ptr<T>();
    p.k = k.data_ptr<T>();
    p.k_t = k_t.data_ptr<T>();
    p.v = v.data_ptr<T>();
    if (v_t.defined()) p.v_t = v_t.data_ptr<T>();
    if (mask.defined()) {
      p.mask = mask.data_ptr<T>();
      p.mask_offset = mask_offset;
      p.mask_row_stride = mask_row_stride;
      p.mask_col_stride = mask_col_stride;
    }
    return p;
  }
};

ScalarType compute_dtype(const Tensor& q) { return q.dtype() == kFloat64 ? kFloat64 : kFloat32; }

// A result computed into `out` directly where it is dense in the compute dtype.
Tensor compute_buffer(const Tensor& out) {
  if (out.dtype() == compute_dtype(out) && out.is_contiguous()) return out;
  return empty(out.sym_sizes(), TensorOptions(compute_dtype(out)));
}

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
          meta::spec(lse_shape(q), compute_dtype(q), q.device())};
}

void forward_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const Operands o(in[0], in[1], in[2], in[3], a, false);
  nn_util::visit_compute(in[0].dtype(), kForward, [&](auto tag) {
    using T = decltype(tag);
    const Tensor result = compute_buffer(out[0]);
    cpu::flash_attention_forward(o.problem<T>(), result.data_ptr<T>(), out[1].data_ptr<T>());
    nn_util::store(out[0], result);
  });
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
  const Operands o(in[2], in[3], in[4], in[7], a, true);
  const Tensor grad_out = nn_util::as_compute(in[0]), result = nn_util::as_compute(in[5]);
  const Tensor lse = nn_util::as_compute(in[6]);
  const Tensor grad_lse = in[1].defined() ? nn_util::as_compute(in[1]) : Tensor();
  nn_util::visit_compute(in[2].dtype(), kBackward, [&](auto tag) {
    using T = decltype(tag);
    std::vector<Tensor> buffers;
    for (const Tensor& t : out) buffers.push_back(compute_buffer(t));
    cpu::FlashGradients<T> g{
        grad_out.data_ptr<T>(),   grad_lse.defined() ? grad_lse.data_ptr<T>() : nullptr,
        buffers[0].data_ptr<T>(), buffers[1].data_ptr<T>(),
        buffers[2].data_ptr<T>(), a.b(3) ? buffers[3].data_ptr<T>() : nullptr};
    cpu::flash_attention_backward(o.problem<T>(), result.data_ptr<T>(), lse.data_ptr<T>(), g);
    for (size_t i = 0; i < out.size(); ++i) nn_util::store(out[i], buffers[i]);
  });
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
