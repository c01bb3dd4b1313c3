#pragma once
// The Transformer stack: TransformerEncoderLayer / TransformerDecoderLayer (post- or pre-norm),
// TransformerEncoder / TransformerDecoder (N copies of a layer plus an optional final norm), and
// Transformer, with PyTorch's options and mask conventions.
#include <string>

#include "kiln/core/arg.h"
#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"
#include "kiln/nn/modules/attention.h"
#include "kiln/nn/modules/container.h"
#include "kiln/nn/modules/dropout.h"
#include "kiln/nn/modules/linear.h"
#include "kiln/nn/modules/normalization.h"

namespace kiln::nn {

struct TransformerLayerOptions {
  TransformerLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  KILN_ARG(int64_t, d_model);
  KILN_ARG(int64_t, nhead);
  KILN_ARG(int64_t, dim_feedforward) = 2048;
  KILN_ARG(double, dropout) = 0.1;
  KILN_ARG(std::string, activation) = "relu";  // or "gelu"
  KILN_ARG(double, layer_norm_eps) = 1e-5;
  KILN_ARG(bool, batch_first) = false;
  KILN_ARG(bool, norm_first) = false;
  KILN_ARG(bool, bias) = true;
};
using TransformerEncoderLayerOptions = TransformerLayerOptions;
using TransformerDecoderLayerOptions = TransformerLayerOptions;

class TransformerEncoderLayerImpl : public Module {
  KILN_MODULE_CLONE(TransformerEncoderLayerImpl)
 public:
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerEncoderLayerImpl(TransformerLayerOptions(d_model, nhead)) {}
  explicit TransformerEncoderLayerImpl(const TransformerLayerOptions& options);
  Tensor forward(const Tensor& src, const Tensor& src_mask = {},
                 const Tensor& src_key_padding_mask = {}, bool is_causal = false);

  TransformerLayerOptions options;
  MultiheadAttention self_attn = nullptr;
  Linear linear1 = nullptr, linear2 = nullptr;
  Dropout dropout = nullptr, dropout1 = nullptr, dropout2 = nullptr;
  LayerNorm norm1 = nullptr, norm2 = nullptr;

 private:
  Tensor feed_forward(const Tensor& x);
};
KILN_MODULE(TransformerEncoderLayer);

class TransformerDecoderLayerImpl : public Module {
  KILN_MODULE_CLONE(TransformerDecoderLayerImpl)
 public:
  TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerDecoderLayerImpl(TransformerLayerOptions(d_model, nhead)) {}
  explicit TransformerDecoderLayerImpl(const TransformerLayerOptions& options);
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {}, bool tgt_is_causal = false,
                 bool memory_is_causal = false);

  TransformerLayerOptions options;
  MultiheadAttention self_attn = nullptr, multihead_attn = nullptr;
  Linear linear1 = nullptr, linear2 = nullptr;
  Dropout dropout = nullptr, dropout1 = nullptr, dropout2 = nullptr, dropout3 = nullptr;
  LayerNorm norm1 = nullptr, norm2 = nullptr, norm3 = nullptr;

 private:
  Tensor feed_forward(const Tensor& x);
};
KILN_MODULE(TransformerDecoderLayer);

// num_layers layers built from layer_options, all starting from the same weights (PyTorch
// deep-copies one layer), and an optional final LayerNorm.
struct TransformerEncoderOptions {
  TransformerEncoderOptions(TransformerLayerOptions layer, int64_t num_layers)
      : layer_(std::move(layer)), num_layers_(num_layers) {}
  KILN_ARG(TransformerLayerOptions, layer);
  KILN_ARG(int64_t, num_layers);
  KILN_ARG(bool, final_norm) = false;
};
using TransformerDecoderOptions = TransformerEncoderOptions;

class TransformerEncoderImpl : public Module {
  KILN_MODULE_CLONE(TransformerEncoderImpl)
 public:
  explicit TransformerEncoderImpl(const TransformerEncoderOptions& options);
  Tensor forward(const Tensor& src, const Tensor& mask = {},
                 const Tensor& src_key_padding_mask = {}, bool is_causal = false);
  TransformerEncoderOptions options;
  ModuleList layers = nullptr;
  LayerNorm norm = nullptr;
};
KILN_MODULE(TransformerEncoder);

class TransformerDecoderImpl : public Module {
  KILN_MODULE_CLONE(TransformerDecoderImpl)
 public:
  explicit TransformerDecoderImpl(const TransformerDecoderOptions& options);
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {}, bool tgt_is_causal = false,
                 bool memory_is_causal = false);
  TransformerDecoderOptions options;
  ModuleList layers = nullptr;
  LayerNorm norm = nullptr;
};
KILN_MODULE(TransformerDecoder);

struct TransformerOptions {
  KILN_ARG(int64_t, d_model) = 512;
  KILN_ARG(int64_t, nhead) = 8;
  KILN_ARG(int64_t, num_encoder_layers) = 6;
  KILN_ARG(int64_t, num_decoder_layers) = 6;
  KILN_ARG(int64_t, dim_feedforward) = 2048;
  KILN_ARG(double, dropout) = 0.1;
  KILN_ARG(std::string, activation) = "relu";
  KILN_ARG(double, layer_norm_eps) = 1e-5;
  KILN_ARG(bool, batch_first) = false;
  KILN_ARG(bool, norm_first) = false;
  KILN_ARG(bool, bias) = true;
};

class TransformerImpl : public Module {
  KILN_MODULE_CLONE(TransformerImpl)
 public:
  explicit TransformerImpl(const TransformerOptions& options = {});
  Tensor forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask = {},
                 const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& src_key_padding_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {});
  // A float (sz, sz) mask with -inf above the diagonal and 0 elsewhere.
  static Tensor generate_square_subsequent_mask(int64_t sz);
  TransformerOptions options;
  TransformerEncoder encoder = nullptr;
  TransformerDecoder decoder = nullptr;
};
KILN_MODULE(Transformer);

}  // namespace kiln::nn
