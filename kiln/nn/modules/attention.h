#pragma once
// MultiheadAttention with PyTorch's parameters, masks and options.
#include <optional>
#include <tuple>

#include "kiln/core/arg.h"
#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"
#include "kiln/nn/modules/linear.h"

namespace kiln::nn {

struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads)
      : embed_dim_(embed_dim), num_heads_(num_heads), kdim_(embed_dim), vdim_(embed_dim) {}
  KILN_ARG(int64_t, embed_dim);
  KILN_ARG(int64_t, num_heads);
  KILN_ARG(double, dropout) = 0.0;
  KILN_ARG(bool, bias) = true;
  KILN_ARG(bool, add_bias_kv) = false;
  KILN_ARG(bool, add_zero_attn) = false;
  KILN_ARG(int64_t, kdim);
  KILN_ARG(int64_t, vdim);
  KILN_ARG(bool, batch_first) = false;
};

// Inputs are (L, N, E) or, with batch_first, (N, L, E); unbatched (L, E) also works.
// attn_mask is (L, S) or (N * num_heads, L, S): bool true = NOT allowed to attend (PyTorch's
// MultiheadAttention convention), or float added to the scores. key_padding_mask is (N, S):
// true (or -inf) marks keys to ignore. Returns (output, weights); weights are undefined unless
// need_weights, averaged over heads when average_attn_weights.
class MultiheadAttentionImpl : public Module {
  KILN_MODULE_CLONE(MultiheadAttentionImpl)
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttentionImpl(MultiheadAttentionOptions(embed_dim, num_heads)) {}
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& options);
  void reset_parameters();
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& key_padding_mask = {}, bool need_weights = true,
                                     const Tensor& attn_mask = {}, bool average_attn_weights = true,
                                     bool is_causal = false);
  void pretty_print(std::ostream& stream) const override;

  MultiheadAttentionOptions options;
  bool same_embed_dims;
  Tensor in_proj_weight, in_proj_bias, q_proj_weight, k_proj_weight, v_proj_weight;
  Tensor bias_k, bias_v;
  Linear out_proj = nullptr;
};
KILN_MODULE(MultiheadAttention);

}  // namespace kiln::nn
