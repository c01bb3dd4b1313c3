#pragma once
// Embedding and EmbeddingBag: lookup tables of rows indexed by integer tokens.
#include <optional>
#include <string>

#include "kiln/core/arg.h"
#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"

namespace kiln::nn {

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  KILN_ARG(int64_t, num_embeddings);
  KILN_ARG(int64_t, embedding_dim);
  KILN_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  KILN_ARG(std::optional<double>, max_norm) = std::nullopt;
  KILN_ARG(double, norm_type) = 2.0;
  KILN_ARG(bool, scale_grad_by_freq) = false;
  KILN_ARG(bool, sparse) = false;
  KILN_ARG(Tensor, _weight) = Tensor();
};

// weight [num_embeddings, embedding_dim] ~ N(0, 1), with the padding_idx row zeroed.
class EmbeddingImpl : public Module {
  KILN_MODULE_CLONE(EmbeddingImpl)
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingImpl(const EmbeddingOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& indices);
  void pretty_print(std::ostream& stream) const override;

  EmbeddingOptions options;
  Tensor weight;
};
KILN_MODULE(Embedding);

struct EmbeddingBagOptions {
  EmbeddingBagOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  KILN_ARG(int64_t, num_embeddings);
  KILN_ARG(int64_t, embedding_dim);
  KILN_ARG(std::optional<double>, max_norm) = std::nullopt;
  KILN_ARG(double, norm_type) = 2.0;
  KILN_ARG(std::string, mode) = "mean";  // "sum", "mean" or "max"
  KILN_ARG(bool, include_last_offset) = false;
  KILN_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

// Sums, averages or maxes the embeddings of each bag: a 2-D input is one bag per row; a 1-D
// input is split into bags at `offsets`. per_sample_weights scale rows (mode "sum" only).
class EmbeddingBagImpl : public Module {
  KILN_MODULE_CLONE(EmbeddingBagImpl)
 public:
  EmbeddingBagImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingBagImpl(EmbeddingBagOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingBagImpl(const EmbeddingBagOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& input, const Tensor& offsets = {},
                 const Tensor& per_sample_weights = {});
  void pretty_print(std::ostream& stream) const override;

  EmbeddingBagOptions options;
  Tensor weight;
};
KILN_MODULE(EmbeddingBag);

}  // namespace kiln::nn
