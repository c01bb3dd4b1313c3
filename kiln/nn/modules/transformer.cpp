#include "kiln/nn/modules/transformer.h"

#include <limits>

#include "kiln/autograd/grad_mode.h"
#include "kiln/nn/init.h"
#include "kiln/ops/ops.h"

namespace kiln::nn {
namespace {

Tensor activate(const Tensor& x, const std::string& activation) {
  return activation == "gelu" ? gelu(x) : x.relu();
}

void check_activation(const std::string& activation) {
  KILN_CHECK(activation == "relu" || activation == "gelu",
             "Transformer layers: activation should be relu or gelu, not ", activation);
}

MultiheadAttention make_attention(const TransformerLayerOptions& o) {
  return MultiheadAttention(MultiheadAttentionOptions(o.d_model(), o.nhead())
                                .dropout(o.dropout())
                                .bias(o.bias())
                                .batch_first(o.batch_first()));
}

LayerNorm make_norm(const TransformerLayerOptions& o) {
  return LayerNorm(LayerNormOptions({o.d_model()}).eps(o.layer_norm_eps()).bias(o.bias()));
}

// Makes n layers that all start from the first one's weights.
template <class Layer>
ModuleList make_layers(const TransformerLayerOptions& o, int64_t n) {
  ModuleList list;
  for (int64_t i = 0; i < n; ++i) {
    Layer layer(o);
    if (i > 0) layer->load_state_dict(list[0]->state_dict());
    list->push_back(layer);
  }
  return list;
}

}  // namespace

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(const TransformerLayerOptions& options_)
    : options(options_) {
  const auto& o = options;
  check_activation(o.activation());
  self_attn = register_module("self_attn", make_attention(o));
  linear1 = register_module("linear1",
                            Linear(LinearOptions(o.d_model(), o.dim_feedforward()).bias(o.bias())));
  dropout = register_module("dropout", Dropout(o.dropout()));
  linear2 = register_module("linear2",
                            Linear(LinearOptions(o.dim_feedforward(), o.d_model()).bias(o.bias())));
  norm1 = register_module("norm1", make_norm(o));
  norm2 = register_module("norm2", make_norm(o));
  dropout1 = register_module("dropout1", Dropout(o.dropout()));
  dropout2 = register_module("dropout2", Dropout(o.dropout()));
}

Tensor TransformerEncoderLayerImpl::feed_forward(const Tensor& x) {
  return dropout2(linear2(dropout(activate(linear1(x), options.activation()))));
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const Tensor& src_mask,
                                            const Tensor& src_key_padding_mask, bool is_causal) {
  auto self_attention = [&](const Tensor& x) {
    return dropout1(std::get<0>(self_attn->forward(x, x, x, src_key_padding_mask, false, src_mask,
                                                   true, is_causal && !src_mask.defined())));
  };
  Tensor x = src;
  if (options.norm_first()) {
    x = x + self_attention(norm1(x));
    return x + feed_forward(norm2(x));
  }
  x = norm1(x + self_attention(x));
  return norm2(x + feed_forward(x));
}

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(const TransformerLayerOptions& options_)
    : options(options_) {
  const auto& o = options;
  check_activation(o.activation());
  self_attn = register_module("self_attn", make_attention(o));
  multihead_attn = register_module("multihead_attn", make_attention(o));
  linear1 = register_module("linear1",
                            Linear(LinearOptions(o.d_model(), o.dim_feedforward()).bias(o.bias())));
  dropout = register_module("dropout", Dropout(o.dropout()));
  linear2 = register_module("linear2",
                            Linear(LinearOptions(o.dim_feedforward(), o.d_model()).bias(o.bias())));
  norm1 = register_module("norm1", make_norm(o));
  norm2 = register_module("norm2", make_norm(o));
  norm3 = register_module("norm3", make_norm(o));
  dropout1 = register_module("dropout1", Dropout(o.dropout()));
  dropout2 = register_module("dropout2", Dropout(o.dropout()));
  dropout3 = register_module("dropout3", Dropout(o.dropout()));
}

Tensor TransformerDecoderLayerImpl::feed_forward(const Tensor& x) {
  return dropout3(linear2(dropout(activate(linear1(x), options.activation()))));
}

Tensor TransformerDecoderLayerImpl::forward(const Tensor& tgt, const Tensor& memory,
                                            const Tensor& tgt_mask, const Tensor& memory_mask,
                                            const Tensor& tgt_key_padding_mask,
                                            const Tensor& memory_key_padding_mask,
                                            bool tgt_is_causal, bool memory_is_causal) {
  auto self_block = [&](const Tensor& x) {
    return dropout1(std::get<0>(self_attn->forward(x, x, x, tgt_key_padding_mask, false, tgt_mask,
                                                   true, tgt_is_causal && !tgt_mask.defined())));
  };
  auto cross_block = [&](const Tensor& x) {
    return dropout2(std::get<0>(
        multihead_attn->forward(x, memory, memory, memory_key_padding_mask, false, memory_mask,
                                true, memory_is_causal && !memory_mask.defined())));
  };
  Tensor x = tgt;
  if (options.norm_first()) {
    x = x + self_block(norm1(x));
    x = x + cross_block(norm2(x));
    return x + feed_forward(norm3(x));
  }
  x = norm1(x + self_block(x));
  x = norm2(x + cross_block(x));
  return norm3(x + feed_forward(x));
}

TransformerEncoderImpl::TransformerEncoderImpl(const TransformerEncoderOptions& options_)
    : options(options_) {
  layers = register_module(
      "layers", make_layers<TransformerEncoderLayer>(options.layer(), options.num_layers()));
  if (options.final_norm()) norm = register_module("norm", make_norm(options.layer()));
}

Tensor TransformerEncoderImpl::forward(const Tensor& src, const Tensor& mask,
                                       const Tensor& src_key_padding_mask, bool is_causal) {
  Tensor x = src;
  for (const auto& layer : *layers)
    x = layer->as<TransformerEncoderLayerImpl>()->forward(x, mask, src_key_padding_mask, is_causal);
  return norm ? norm(x) : x;
}

TransformerDecoderImpl::TransformerDecoderImpl(const TransformerDecoderOptions& options_)
    : options(options_) {
  layers = register_module(
      "layers", make_layers<TransformerDecoderLayer>(options.layer(), options.num_layers()));
  if (options.final_norm()) norm = register_module("norm", make_norm(options.layer()));
}

Tensor TransformerDecoderImpl::forward(const Tensor& tgt, const Tensor& memory,
                                       const Tensor& tgt_mask, const Tensor& memory_mask,
                                       const Tensor& tgt_key_padding_mask,
                                       const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                       bool memory_is_causal) {
  Tensor x = tgt;
  for (const auto& layer : *layers)
    x = layer->as<TransformerDecoderLayerImpl>()->forward(
        x, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
        tgt_is_causal, memory_is_causal);
  return norm ? norm(x) : x;
}

TransformerImpl::TransformerImpl(const TransformerOptions& options_) : options(options_) {
  const auto& o = options;
  TransformerLayerOptions layer = TransformerLayerOptions(o.d_model(), o.nhead())
                                      .dim_feedforward(o.dim_feedforward())
                                      .dropout(o.dropout())
                                      .activation(o.activation())
                                      .layer_norm_eps(o.layer_norm_eps())
                                      .batch_first(o.batch_first())
                                      .norm_first(o.norm_first())
                                      .bias(o.bias());
  encoder = register_module(
      "encoder", TransformerEncoder(
                     TransformerEncoderOptions(layer, o.num_encoder_layers()).final_norm(true)));
  decoder = register_module(
      "decoder", TransformerDecoder(
                     TransformerDecoderOptions(layer, o.num_decoder_layers()).final_norm(true)));
  for (Tensor& p : parameters())
    if (p.dim() > 1) init::xavier_uniform_(p);
}

Tensor TransformerImpl::forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask,
                                const Tensor& tgt_mask, const Tensor& memory_mask,
                                const Tensor& src_key_padding_mask,
                                const Tensor& tgt_key_padding_mask,
                                const Tensor& memory_key_padding_mask) {
  const int64_t batch_dim = options.batch_first() ? 0 : 1;
  KILN_CHECK(src.dim() != 3 || src.sym_size(batch_dim) == tgt.sym_size(batch_dim),
             "Transformer: the batch number of src and tgt must be equal (src ", src.sym_sizes(),
             ", tgt ", tgt.sym_sizes(), ")");
  Tensor memory = encoder->forward(src, src_mask, src_key_padding_mask);
  return decoder->forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                          memory_key_padding_mask);
}

Tensor TransformerImpl::generate_square_subsequent_mask(int64_t sz) {
  return full({sz, sz}, -std::numeric_limits<double>::infinity()).triu(1);
}

}  // namespace kiln::nn
