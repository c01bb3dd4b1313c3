#pragma once
// Neural-network functional ops with ATen's names and argument orders: embedding, the
// normalisations, dropout, scaled dot-product attention, losses and distances.
#include <optional>
#include <tuple>

#include "kiln/core/generator.h"
#include "kiln/core/tensor.h"

namespace kiln {

// How a loss reduces its per-element values.
enum class Reduction { None, Mean, Sum };

// ---- embedding (nn/embedding.cpp) ----
// Rows of `weight` picked by integer `indices`; padding_idx rows get no gradient.
// scale_grad_by_freq divides each row's gradient by how often its index occurs. sparse
// gradients are not supported (the gradient is always dense).
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1,
                 bool scale_grad_by_freq = false, bool sparse = false);
// Rescales, in place and without gradient, the rows of weight referenced by indices whose
// norm_type-norm exceeds max_norm, to norm max_norm.
Tensor& embedding_renorm_(Tensor& weight, const Tensor& indices, double max_norm, double norm_type);

// ---- normalisation (nn/norm_layer.cpp, nn/norm_batch.cpp) ----
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
// eps nullopt: the machine epsilon of input's dtype.
Tensor rms_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight = {},
                std::optional<double> eps = std::nullopt);
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
// In training, normalises with the batch statistics and updates running_mean/running_var (when
// given) in place: running = (1 - momentum) * running + momentum * batch (unbiased variance).
Tensor batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, bool training,
                  double momentum, double eps);
Tensor instance_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                     const Tensor& running_mean, const Tensor& running_var, bool use_input_stats,
                     double momentum, double eps);

// ---- dropout (nn/dropout.cpp) ----
// Zeroes elements with probability p and scales the rest by 1 / (1 - p) when train.
Tensor dropout(const Tensor& input, double p, bool train, Generator* generator = nullptr);
// Zeroes whole channels (dim 1 of a batched input, dim 0 of an unbatched one).
Tensor feature_dropout(const Tensor& input, double p, bool train, Generator* generator = nullptr);
// Keeps mean 0 and variance 1 of SELU activations.
Tensor alpha_dropout(const Tensor& input, double p, bool train, Generator* generator = nullptr);
Tensor feature_alpha_dropout(const Tensor& input, double p, bool train,
                             Generator* generator = nullptr);

// ---- attention (nn/attention.cpp) ----
// softmax(q k^T * scale + mask) v over (..., L, E) queries and (..., S, E) keys. A bool mask is
// true where attention is allowed; a float mask is added to the scores. enable_gqa lets key and
// value have fewer heads (dim -3) than query, each shared by a group of query heads.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = {}, double dropout_p = 0,
                                    bool is_causal = false,
                                    std::optional<double> scale = std::nullopt,
                                    bool enable_gqa = false);

// ---- losses (nn/loss_nll.cpp, nn/loss.cpp) ----
// input (N, C), (C) or (N, C, d1, ...) of log-probabilities; target int64 class indices.
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                Reduction reduction = Reduction::Mean, int64_t ignore_index = -100);
// Class indices (int64 target) or class probabilities (floating target of input's shape).
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                     Reduction reduction = Reduction::Mean, int64_t ignore_index = -100,
                     double label_smoothing = 0);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      Reduction reduction = Reduction::Mean, double beta = 1.0);
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                  double delta = 1.0);
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            Reduction reduction = Reduction::Mean);
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight = {}, const Tensor& pos_weight = {},
                                        Reduction reduction = Reduction::Mean);
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
              bool log_target = false);
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             double margin = 0, Reduction reduction = Reduction::Mean);
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           double margin = 0, Reduction reduction = Reduction::Mean);
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           double margin = 1.0, double p = 2, double eps = 1e-6, bool swap = false,
                           Reduction reduction = Reduction::Mean);

// ---- compositions of registered ops (nn/composite.cpp); their gradients come from the parts ----
// x where x > 0, else weight * x; weight holds one value or one per channel (dim 1).
Tensor prelu(const Tensor& input, const Tensor& weight);
// The gated linear unit: a * sigmoid(b) with a, b the two halves of input along dim.
Tensor glu(const Tensor& input, int64_t dim = -1);
// PyTorch's local_response_norm: x / (k + alpha * mean of x^2 over `size` neighbouring
// channels)^beta, on [N, C, *] inputs of at least 3 dims.
Tensor local_response_norm(const Tensor& input, int64_t size, double alpha = 1e-4,
                           double beta = 0.75, double k = 1.0);

// ---- distances (nn/distance.cpp) ----
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8);
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2, double eps = 1e-6,
                         bool keepdim = false);
// p-norm distances between the rows of x1 (..., P, M) and x2 (..., R, M): (..., P, R).
Tensor cdist(const Tensor& x1, const Tensor& x2, double p = 2);
// x / max(norm_p(x, dim), eps).
Tensor normalize(const Tensor& input, double p = 2, int64_t dim = 1, double eps = 1e-12);

}  // namespace kiln
