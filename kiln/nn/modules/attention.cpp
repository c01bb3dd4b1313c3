#include "kiln/nn/modules/attention.h"

#include <cmath>
#include <limits>
#include <ostream>

#include "kiln/nn/init.h"
#include "kiln/ops/nn.h"
#include "kiln/ops/ops.h"

namespace kiln::nn {
namespace {

// A mask as an additive float mask: bool true (masked out) becomes -inf, floats stay.
Tensor additive_mask(const Tensor& mask, ScalarType dtype) {
  if (!mask.defined()) return mask;
  if (mask.dtype() == kBool)
    return zeros(mask.sym_sizes(), TensorOptions(dtype))
        .masked_fill(mask, -std::numeric_limits<double>::infinity());
  return mask.to(dtype);
}

}  // namespace

MultiheadAttentionImpl::MultiheadAttentionImpl(const MultiheadAttentionOptions& options_)
    : options(options_) {
  const int64_t E = options.embed_dim(), H = options.num_heads();
  KILN_CHECK(H > 0 && E % H == 0, "MultiheadAttention: embed_dim (", E,
             ") must be divisible by num_heads (", H, ")");
  same_embed_dims = options.kdim() == E && options.vdim() == E;
  if (same_embed_dims) {
    in_proj_weight = register_parameter("in_proj_weight", kiln::empty({3 * E, E}));
  } else {
    q_proj_weight = register_parameter("q_proj_weight", kiln::empty({E, E}));
    k_proj_weight = register_parameter("k_proj_weight", kiln::empty({E, options.kdim()}));
    v_proj_weight = register_parameter("v_proj_weight", kiln::empty({E, options.vdim()}));
  }
  if (options.bias()) in_proj_bias = register_parameter("in_proj_bias", kiln::empty({3 * E}));
  out_proj = register_module("out_proj", Linear(LinearOptions(E, E).bias(options.bias())));
  if (options.add_bias_kv()) {
    bias_k = register_parameter("bias_k", kiln::empty({1, 1, E}));
    bias_v = register_parameter("bias_v", kiln::empty({1, 1, E}));
  }
  reset_parameters();
}

void MultiheadAttentionImpl::reset_parameters() {
  if (same_embed_dims) {
    init::xavier_uniform_(in_proj_weight);
  } else {
    init::xavier_uniform_(q_proj_weight);
    init::xavier_uniform_(k_proj_weight);
    init::xavier_uniform_(v_proj_weight);
  }
  if (in_proj_bias.defined()) {
    init::zeros_(in_proj_bias);
    init::zeros_(out_proj->bias);
  }
  if (bias_k.defined()) {
    init::xavier_normal_(bias_k);
    init::xavier_normal_(bias_v);
  }
}

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(
    const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& key_padding_mask,
    bool need_weights, const Tensor& attn_mask, bool average_attn_weights, bool is_causal) {
  const int64_t E = options.embed_dim(), H = options.num_heads(), hd = E / H;
  KILN_CHECK(query.dim() == 3 || query.dim() == 2,
             "MultiheadAttention: query should be unbatched 2-D or batched 3-D, got shape ",
             query.sym_sizes());
  const bool unbatched = query.dim() == 2;
  // Work in (L, N, E) as PyTorch's functional form does.
  auto seq_first = [&](const Tensor& t) {
    if (unbatched) return t.unsqueeze(1);
    return options.batch_first() ? t.transpose(0, 1) : t;
  };
  Tensor q = seq_first(query), k = seq_first(key), v = seq_first(value);
  KILN_CHECK(q.sym_size(2) == E, "MultiheadAttention: expected query feature size ", E, ", got ",
             q.sym_sizes());
  const SymInt L = q.sym_size(0), N = q.sym_size(1);

  Tensor bq, bk, bv;
  if (in_proj_bias.defined()) {
    auto b = in_proj_bias.chunk(3);
    bq = b[0], bk = b[1], bv = b[2];
  }
  if (same_embed_dims) {
    auto w = in_proj_weight.chunk(3);
    q = linear(q, w[0], bq), k = linear(k, w[1], bk), v = linear(v, w[2], bv);
  } else {
    q = linear(q, q_proj_weight, bq), k = linear(k, k_proj_weight, bk);
    v = linear(v, v_proj_weight, bv);
  }

  Tensor mask = additive_mask(attn_mask, q.dtype());
  if (is_causal && !mask.defined()) {
    const int64_t l = L.guard_int(), s = k.sym_size(0).guard_int();
    mask = additive_mask(ones({l, s}, TensorOptions(kBool)).triu(1), q.dtype());
  }
  Tensor pad_mask = additive_mask(key_padding_mask, q.dtype());
  if (unbatched && pad_mask.defined()) pad_mask = pad_mask.unsqueeze(0);
  auto append_column = [](Tensor& m) {
    if (m.defined()) m = pad(m, {0, 1});
  };
  if (bias_k.defined()) {
    k = cat({k, bias_k.expand({SymInt(1), N, SymInt(E)})});
    v = cat({v, bias_v.expand({SymInt(1), N, SymInt(E)})});
    append_column(mask), append_column(pad_mask);
  }
  // (S, N, E) -> (N, H, S, hd)
  auto heads = [&](const Tensor& t) {
    return t.reshape({t.sym_size(0), N, SymInt(H), SymInt(hd)}).permute({1, 2, 0, 3});
  };
  q = heads(q), k = heads(k), v = heads(v);
  if (options.add_zero_attn()) {
    k = cat({k, zeros({N, SymInt(H), SymInt(1), SymInt(hd)}, k.options())}, 2);
    v = cat({v, zeros({N, SymInt(H), SymInt(1), SymInt(hd)}, v.options())}, 2);
    append_column(mask), append_column(pad_mask);
  }
  const SymInt S = k.sym_size(2);
  // Combine masks into one (N, H, L, S) additive mask.
  Tensor merged;
  if (mask.defined())
    merged =
        mask.dim() == 2 ? mask.view({SymInt(1), SymInt(1), L, S}) : mask.view({N, SymInt(H), L, S});
  if (pad_mask.defined()) {
    Tensor p = pad_mask.view({N, SymInt(1), SymInt(1), S});
    merged = merged.defined() ? merged + p : p;
  }
  const double dropout_p = is_training() ? options.dropout() : 0.0;
  Tensor out, weights;
  if (need_weights) {
    Tensor scores = q.matmul(k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(hd)));
    if (merged.defined()) scores = scores + merged;
    weights = scores.softmax(-1);
    out = dropout(weights, dropout_p, dropout_p > 0).matmul(v);
    if (average_attn_weights) weights = weights.mean(IntArrayRef{1});
    if (unbatched) weights = weights.squeeze(IntArrayRef{0});
  } else {
    out = scaled_dot_product_attention(q, k, v, merged, dropout_p, false);
  }
  // (N, H, L, hd) -> (L, N, E)
  out = out.permute({2, 0, 1, 3}).reshape({L, N, SymInt(E)});
  out = out_proj->forward(out);
  if (unbatched) {
    out = out.squeeze(IntArrayRef{1});
  } else if (options.batch_first()) {
    out = out.transpose(0, 1);
  }
  return {out, weights};
}

void MultiheadAttentionImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::MultiheadAttention(embed_dim=" << options.embed_dim()
         << ", num_heads=" << options.num_heads() << ")";
}

}  // namespace kiln::nn
