#include "kiln/nn/modules/embedding.h"

#include <ostream>

#include "kiln/autograd/grad_mode.h"
#include "kiln/nn/init.h"
#include "kiln/ops/index.h"
#include "kiln/ops/nn.h"
#include "kiln/ops/ops.h"

namespace kiln::nn {
namespace {

// padding_idx as a non-negative row (negative values count from the end, as in PyTorch).
std::optional<int64_t> wrap_padding_idx(std::optional<int64_t> padding_idx, int64_t rows,
                                        const char* op) {
  if (!padding_idx) return std::nullopt;
  KILN_CHECK(*padding_idx < rows && *padding_idx >= -rows, op, ": padding_idx ", *padding_idx,
             " must be within num_embeddings (", rows, ")");
  return *padding_idx < 0 ? *padding_idx + rows : *padding_idx;
}

void renorm_rows(Tensor& weight, const Tensor& indices, const std::optional<double>& max_norm,
                 double norm_type) {
  if (!max_norm) return;
  NoGradGuard no_grad;
  embedding_renorm_(weight, indices, *max_norm, norm_type);
}

}  // namespace

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& options_) : options(options_) {
  options.padding_idx(
      wrap_padding_idx(options.padding_idx(), options.num_embeddings(), "Embedding"));
  if (options._weight().defined()) {
    const SymShape expected{options.num_embeddings(), options.embedding_dim()};
    KILN_CHECK(options._weight().sym_sizes().equals(expected), "Embedding: _weight has shape ",
               options._weight().sym_sizes(), ", expected [", options.num_embeddings(), ", ",
               options.embedding_dim(), "]");
    weight = register_parameter("weight", options._weight());
  } else {
    weight = register_parameter("weight",
                                kiln::empty({options.num_embeddings(), options.embedding_dim()}));
    reset_parameters();
  }
}

void EmbeddingImpl::reset_parameters() {
  init::normal_(weight);
  if (options.padding_idx()) {
    NoGradGuard no_grad;
    weight[*options.padding_idx()].fill_(0);
  }
}

Tensor EmbeddingImpl::forward(const Tensor& indices) {
  renorm_rows(weight, indices, options.max_norm(), options.norm_type());
  return embedding(weight, indices, options.padding_idx().value_or(-1),
                   options.scale_grad_by_freq(), options.sparse());
}

void EmbeddingImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Embedding(num_embeddings=" << options.num_embeddings()
         << ", embedding_dim=" << options.embedding_dim();
  if (options.padding_idx()) stream << ", padding_idx=" << *options.padding_idx();
  if (options.max_norm()) stream << ", max_norm=" << *options.max_norm();
  stream << ")";
}

EmbeddingBagImpl::EmbeddingBagImpl(const EmbeddingBagOptions& options_) : options(options_) {
  KILN_CHECK(options.mode() == "sum" || options.mode() == "mean" || options.mode() == "max",
             "EmbeddingBag: mode has to be one of sum, mean or max, got '", options.mode(), "'");
  options.padding_idx(
      wrap_padding_idx(options.padding_idx(), options.num_embeddings(), "EmbeddingBag"));
  weight = register_parameter("weight",
                              kiln::empty({options.num_embeddings(), options.embedding_dim()}));
  reset_parameters();
}

void EmbeddingBagImpl::reset_parameters() {
  init::normal_(weight);
  if (options.padding_idx()) {
    NoGradGuard no_grad;
    weight[*options.padding_idx()].fill_(0);
  }
}

Tensor EmbeddingBagImpl::forward(const Tensor& input, const Tensor& offsets,
                                 const Tensor& per_sample_weights) {
  const std::string& mode = options.mode();
  KILN_CHECK(!per_sample_weights.defined() || mode == "sum",
             "EmbeddingBag: per_sample_weights is only supported for mode='sum' (got mode='", mode,
             "')");
  Tensor flat = input, segment;
  int64_t bags = 0;
  if (input.dim() == 2) {
    KILN_CHECK(!offsets.defined(), "EmbeddingBag: offsets has to be undefined for a 2-D input");
    bags = input.sym_size(0).guard_int();
    const int64_t len = input.sym_size(1).guard_int();
    flat = input.reshape({-1});
    segment = arange(bags * len, TensorOptions(kInt64)).div(len, "floor");
  } else {
    KILN_CHECK(input.dim() == 1 && offsets.defined() && offsets.dim() == 1,
               "EmbeddingBag: a 1-D input needs 1-D offsets (got input ", input.sym_sizes(), ")");
    bags = offsets.sym_size(0).guard_int() - (options.include_last_offset() ? 1 : 0);
    // Element i belongs to the last bag whose offset is <= i.
    Tensor pos = arange(flat.sym_size(0).guard_int(), TensorOptions(kInt64));
    segment = pos.unsqueeze(0).ge(offsets.slice(0, 0, bags).unsqueeze(1)).sum(IntArrayRef{0}) - 1;
  }
  renorm_rows(weight, flat, options.max_norm(), options.norm_type());
  Tensor rows = embedding(weight, flat);
  Tensor keep = options.padding_idx() ? flat.ne(*options.padding_idx()) : Tensor();
  Tensor scale = per_sample_weights.defined() ? per_sample_weights.reshape({-1}) : Tensor();
  if (keep.defined()) scale = scale.defined() ? scale * keep : keep.to(rows.dtype());
  if (scale.defined()) rows = rows * scale.unsqueeze(1);
  const int64_t dim = options.embedding_dim();
  Tensor out = zeros({bags, dim}, rows.options());
  if (mode == "max") {
    Tensor idx = segment.unsqueeze(1).expand({segment.sym_size(0), SymInt(dim)});
    return out.scatter_reduce(0, idx, rows, "amax", /*include_self=*/false);
  }
  out = out.index_add(0, segment, rows);
  if (mode == "sum") return out;
  Tensor ones_per_row =
      keep.defined() ? keep.to(rows.dtype()) : ones({flat.sym_size(0)}, rows.options());
  Tensor counts = zeros({bags}, rows.options()).index_add(0, segment, ones_per_row);
  return out / counts.clamp_min(1).unsqueeze(1);
}

void EmbeddingBagImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::EmbeddingBag(num_embeddings=" << options.num_embeddings()
         << ", embedding_dim=" << options.embedding_dim() << ", mode=" << options.mode() << ")";
}

}  // namespace kiln::nn
