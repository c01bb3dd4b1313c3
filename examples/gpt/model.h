#pragma once
// A small GPT: token and position embeddings, pre-norm blocks (causal self-attention and a GELU
// MLP), a final LayerNorm and an output layer tied to the token embedding.
#include "kiln/kiln.h"
#include "kiln/nn/functional.h"
#include "kiln/nn/modules/dropout.h"
#include "kiln/nn/modules/embedding.h"
#include "kiln/nn/modules/normalization.h"
#include "kiln/nn/nn.h"

namespace gpt {

struct Config {
  int64_t vocab_size = 0;
  int64_t block_size = 16;  // longest context
  int64_t n_layer = 2;
  int64_t n_head = 4;
  int64_t n_embd = 64;
  double dropout = 0.0;
  bool flex = false;  // causal attention through flex_attention and a block mask, not sdpa
};

struct BlockImpl : kiln::nn::Module {
  explicit BlockImpl(const Config& c);
  kiln::Tensor forward(const kiln::Tensor& x);

  int64_t n_head;
  bool flex;
  kiln::nn::LayerNorm ln1 = nullptr, ln2 = nullptr;
  kiln::nn::Linear qkv = nullptr, proj = nullptr, fc = nullptr, fc_out = nullptr;
  kiln::nn::Dropout drop = nullptr;
};
KILN_MODULE(Block);

struct GPTImpl : kiln::nn::Module {
  explicit GPTImpl(const Config& c);
  // idx (B, T) int64 tokens -> logits (B, T, vocab_size).
  kiln::Tensor forward(const kiln::Tensor& idx);
  // Appends `steps` tokens to idx: greedy when temperature is 0, else sampled.
  kiln::Tensor generate(kiln::Tensor idx, int64_t steps, double temperature = 0);

  Config config;
  kiln::nn::Embedding tok = nullptr, pos = nullptr;
  kiln::nn::ModuleList blocks = nullptr;
  kiln::nn::LayerNorm ln_f = nullptr;
};
KILN_MODULE(GPT);

}  // namespace gpt
