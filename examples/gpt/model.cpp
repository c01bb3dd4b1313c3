#include "examples/gpt/model.h"

namespace gpt {

using namespace kiln;
namespace F = kiln::nn::functional;

BlockImpl::BlockImpl(const Config& c) : n_head(c.n_head), flex(c.flex) {
  const int64_t d = c.n_embd;
  ln1 = register_module("ln1", nn::LayerNorm(nn::LayerNormOptions({d})));
  qkv = register_module("qkv", nn::Linear(d, 3 * d));
  proj = register_module("proj", nn::Linear(d, d));
  ln2 = register_module("ln2", nn::LayerNorm(nn::LayerNormOptions({d})));
  fc = register_module("fc", nn::Linear(d, 4 * d));
  fc_out = register_module("fc_out", nn::Linear(4 * d, d));
  drop = register_module("drop", nn::Dropout(c.dropout));
}

Tensor BlockImpl::forward(const Tensor& x) {
  const SymInt B = x.sym_size(0), T = x.sym_size(1);  // symbolic under export or compile
  const int64_t C = x.size(2);
  auto heads = [&](const Tensor& t) { return t.view({B, T, n_head, C / n_head}).transpose(1, 2); };
  std::vector<Tensor> parts = qkv(ln1(x)).split(C, -1);
  const Tensor q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]);
  Tensor y;
  if (flex) {
    auto causal = [](flex::Expr, flex::Expr, flex::Expr qi, flex::Expr kvi) { return qi >= kvi; };
    y = flex_attention(q, k, v, {}, create_block_mask(causal, std::nullopt, std::nullopt, T, T));
  } else {
    y = F::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
  }
  Tensor h = x + drop(proj(y.transpose(1, 2).reshape({B, T, C})));
  return h + drop(fc_out(F::gelu(fc(ln2(h)))));
}

GPTImpl::GPTImpl(const Config& c) : config(c) {
  tok = register_module("tok", nn::Embedding(c.vocab_size, c.n_embd));
  pos = register_module("pos", nn::Embedding(c.block_size, c.n_embd));
  blocks = register_module("blocks", nn::ModuleList());
  for (int64_t i = 0; i < c.n_layer; ++i) blocks->push_back(Block(c));
  ln_f = register_module("ln_f", nn::LayerNorm(nn::LayerNormOptions({c.n_embd})));
  // GPT-2's initialisation: N(0, 0.02) weights, zero biases.
  for (auto& p : named_parameters()) {
    if (p.key().ends_with("bias")) {
      nn::init::zeros_(p.value());
    } else if (p.value().dim() == 2) {
      nn::init::normal_(p.value(), 0, 0.02);
    }
  }
}

Tensor GPTImpl::forward(const Tensor& idx) {
  // Symbolic, so that a captured or exported GPT takes any length up to block_size.
  const SymInt T = idx.sym_size(1);
  KILN_CHECK(T <= config.block_size, "GPT: sequence of ", T, " tokens is longer than block_size ",
             config.block_size);
  // The first T rows of the position table: pos(arange(T)) without a gather.
  Tensor x = tok(idx) + pos->weight.narrow(0, 0, T);
  // Through the holder, so that a block whose compile() was called runs compiled.
  for (const auto& block : *blocks) x = Block(std::static_pointer_cast<BlockImpl>(block))(x);
  // The output layer shares the token embedding's weight (weight tying).
  return linear(ln_f(x), tok->weight);
}

Tensor GPTImpl::generate(Tensor idx, int64_t steps, double temperature) {
  NoGradGuard no_grad;
  for (int64_t i = 0; i < steps; ++i) {
    const int64_t T = idx.size(1);
    Tensor context = T > config.block_size ? idx.slice(1, T - config.block_size) : idx;
    Tensor logits = forward(context).select(1, -1);
    Tensor next = temperature == 0 ? logits.argmax(-1, /*keepdim=*/true)
                                   : multinomial((logits / temperature).softmax(-1), 1);
    idx = cat({idx, next}, 1);
  }
  return idx;
}

}  // namespace gpt
