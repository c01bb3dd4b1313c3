#pragma once
// kiln::nn::functional (libtorch's `namespace F = torch::nn::functional;`): the functional forms
// with libtorch's FuncOptions objects, e.g.
//   F::cross_entropy(logits, target, F::CrossEntropyFuncOptions().label_smoothing(0.1));
//   F::dropout(x, F::DropoutFuncOptions().p(0.2).training(is_training()));
// Each forwards to the op of the same name in namespace kiln.
#include <optional>
#include <string>
#include <vector>

#include "kiln/core/arg.h"
#include "kiln/ops/ops.h"

namespace kiln {
inline constexpr Reduction kMean = Reduction::Mean;
inline constexpr Reduction kSum = Reduction::Sum;
inline constexpr Reduction kNone = Reduction::None;
}  // namespace kiln

namespace kiln::nn::functional {

// ---- activations ----
inline Tensor relu(const Tensor& x) { return x.relu(); }
inline Tensor gelu(const Tensor& x, const std::string& approximate = "none") {
  return kiln::gelu(x, approximate);
}
inline Tensor silu(const Tensor& x) { return kiln::silu(x); }
inline Tensor sigmoid(const Tensor& x) { return x.sigmoid(); }
inline Tensor tanh(const Tensor& x) { return x.tanh(); }
inline Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01) {
  return kiln::leaky_relu(x, negative_slope);
}
inline Tensor softmax(const Tensor& x, int64_t dim) { return x.softmax(dim); }
inline Tensor log_softmax(const Tensor& x, int64_t dim) { return x.log_softmax(dim); }

// ---- dropout ----
struct DropoutFuncOptions {
  KILN_ARG(double, p) = 0.5;
  KILN_ARG(bool, training) = true;
  KILN_ARG(bool, inplace) = false;
};
inline Tensor dropout(const Tensor& x, const DropoutFuncOptions& o = {}) {
  return kiln::dropout(x, o.p(), o.training());
}

// ---- normalisation ----
struct LayerNormFuncOptions {
  LayerNormFuncOptions(std::vector<int64_t> normalized_shape)  // NOLINT
      : normalized_shape_(std::move(normalized_shape)) {}
  KILN_ARG(std::vector<int64_t>, normalized_shape);
  KILN_ARG(Tensor, weight) = Tensor();
  KILN_ARG(Tensor, bias) = Tensor();
  KILN_ARG(double, eps) = 1e-5;
};
inline Tensor layer_norm(const Tensor& x, const LayerNormFuncOptions& o) {
  return kiln::layer_norm(x, o.normalized_shape(), o.weight(), o.bias(), o.eps());
}

struct NormalizeFuncOptions {
  KILN_ARG(double, p) = 2.0;
  KILN_ARG(int64_t, dim) = 1;
  KILN_ARG(double, eps) = 1e-12;
};
inline Tensor normalize(const Tensor& x, const NormalizeFuncOptions& o = {}) {
  return kiln::normalize(x, o.p(), o.dim(), o.eps());
}

// ---- embedding ----
struct EmbeddingFuncOptions {
  KILN_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  KILN_ARG(bool, scale_grad_by_freq) = false;
};
inline Tensor embedding(const Tensor& input, const Tensor& weight,
                        const EmbeddingFuncOptions& o = {}) {
  return kiln::embedding(weight, input, o.padding_idx().value_or(-1), o.scale_grad_by_freq());
}
inline Tensor one_hot(const Tensor& t, int64_t num_classes = -1) {
  return kiln::one_hot(t, num_classes);
}

// ---- losses ----
struct CrossEntropyFuncOptions {
  KILN_ARG(Tensor, weight) = Tensor();
  KILN_ARG(int64_t, ignore_index) = -100;
  KILN_ARG(Reduction, reduction) = Reduction::Mean;
  KILN_ARG(double, label_smoothing) = 0.0;
};
inline Tensor cross_entropy(const Tensor& input, const Tensor& target,
                            const CrossEntropyFuncOptions& o = {}) {
  return kiln::cross_entropy(input, target, o.weight(), o.reduction(), o.ignore_index(),
                             o.label_smoothing());
}

struct NLLLossFuncOptions {
  KILN_ARG(Tensor, weight) = Tensor();
  KILN_ARG(int64_t, ignore_index) = -100;
  KILN_ARG(Reduction, reduction) = Reduction::Mean;
};
inline Tensor nll_loss(const Tensor& input, const Tensor& target,
                       const NLLLossFuncOptions& o = {}) {
  return kiln::nll_loss(input, target, o.weight(), o.reduction(), o.ignore_index());
}

struct ReductionFuncOptions {
  ReductionFuncOptions(Reduction reduction = Reduction::Mean) : reduction_(reduction) {}  // NOLINT
  KILN_ARG(Reduction, reduction);
};
using MSELossFuncOptions = ReductionFuncOptions;
using L1LossFuncOptions = ReductionFuncOptions;
inline Tensor mse_loss(const Tensor& input, const Tensor& target,
                       const MSELossFuncOptions& o = {}) {
  return kiln::mse_loss(input, target, o.reduction());
}
inline Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& o = {}) {
  return kiln::l1_loss(input, target, o.reduction());
}

struct SmoothL1LossFuncOptions {
  KILN_ARG(Reduction, reduction) = Reduction::Mean;
  KILN_ARG(double, beta) = 1.0;
};
inline Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                             const SmoothL1LossFuncOptions& o = {}) {
  return kiln::smooth_l1_loss(input, target, o.reduction(), o.beta());
}

struct HuberLossFuncOptions {
  KILN_ARG(Reduction, reduction) = Reduction::Mean;
  KILN_ARG(double, delta) = 1.0;
};
inline Tensor huber_loss(const Tensor& input, const Tensor& target,
                         const HuberLossFuncOptions& o = {}) {
  return kiln::huber_loss(input, target, o.reduction(), o.delta());
}

struct BinaryCrossEntropyFuncOptions {
  KILN_ARG(Tensor, weight) = Tensor();
  KILN_ARG(Reduction, reduction) = Reduction::Mean;
};
inline Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                                   const BinaryCrossEntropyFuncOptions& o = {}) {
  return kiln::binary_cross_entropy(input, target, o.weight(), o.reduction());
}

struct BinaryCrossEntropyWithLogitsFuncOptions {
  KILN_ARG(Tensor, weight) = Tensor();
  KILN_ARG(Tensor, pos_weight) = Tensor();
  KILN_ARG(Reduction, reduction) = Reduction::Mean;
};
inline Tensor binary_cross_entropy_with_logits(
    const Tensor& input, const Tensor& target,
    const BinaryCrossEntropyWithLogitsFuncOptions& o = {}) {
  return kiln::binary_cross_entropy_with_logits(input, target, o.weight(), o.pos_weight(),
                                                o.reduction());
}

// reduction "batchmean" (the mathematically correct KL mean) divides the sum by the batch size.
struct KLDivFuncOptions {
  KILN_ARG(std::string, reduction) = "mean";  // "none", "mean", "sum" or "batchmean"
  KILN_ARG(bool, log_target) = false;
};
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& o = {});

// ---- convolution and pooling ----
struct ConvFuncOptions {
  KILN_ARG(Tensor, bias) = Tensor();
  KILN_ARG(std::vector<int64_t>, stride) = std::vector<int64_t>{1};
  KILN_ARG(std::vector<int64_t>, padding) = std::vector<int64_t>{0};
  KILN_ARG(std::vector<int64_t>, dilation) = std::vector<int64_t>{1};
  KILN_ARG(int64_t, groups) = 1;
};
using Conv1dFuncOptions = ConvFuncOptions;
using Conv2dFuncOptions = ConvFuncOptions;
using Conv3dFuncOptions = ConvFuncOptions;
inline Tensor conv1d(const Tensor& x, const Tensor& w, const ConvFuncOptions& o = {}) {
  return kiln::conv1d(x, w, o.bias(), o.stride(), o.padding(), o.dilation(), o.groups());
}
inline Tensor conv2d(const Tensor& x, const Tensor& w, const ConvFuncOptions& o = {}) {
  return kiln::conv2d(x, w, o.bias(), o.stride(), o.padding(), o.dilation(), o.groups());
}
inline Tensor conv3d(const Tensor& x, const Tensor& w, const ConvFuncOptions& o = {}) {
  return kiln::conv3d(x, w, o.bias(), o.stride(), o.padding(), o.dilation(), o.groups());
}

struct MaxPoolFuncOptions {
  MaxPoolFuncOptions(std::vector<int64_t> kernel_size)  // NOLINT: MaxPool2dFuncOptions(2)
      : kernel_size_(std::move(kernel_size)) {}
  MaxPoolFuncOptions(int64_t kernel_size) : kernel_size_({kernel_size}) {}  // NOLINT
  KILN_ARG(std::vector<int64_t>, kernel_size);
  KILN_ARG(std::vector<int64_t>, stride) = std::vector<int64_t>{};
  KILN_ARG(std::vector<int64_t>, padding) = std::vector<int64_t>{0};
  KILN_ARG(std::vector<int64_t>, dilation) = std::vector<int64_t>{1};
  KILN_ARG(bool, ceil_mode) = false;
};
using MaxPool1dFuncOptions = MaxPoolFuncOptions;
using MaxPool2dFuncOptions = MaxPoolFuncOptions;
inline Tensor max_pool1d(const Tensor& x, const MaxPoolFuncOptions& o) {
  return kiln::max_pool1d(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
inline Tensor max_pool2d(const Tensor& x, const MaxPoolFuncOptions& o) {
  return kiln::max_pool2d(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}

struct AvgPoolFuncOptions {
  AvgPoolFuncOptions(std::vector<int64_t> kernel_size)  // NOLINT
      : kernel_size_(std::move(kernel_size)) {}
  AvgPoolFuncOptions(int64_t kernel_size) : kernel_size_({kernel_size}) {}  // NOLINT
  KILN_ARG(std::vector<int64_t>, kernel_size);
  KILN_ARG(std::vector<int64_t>, stride) = std::vector<int64_t>{};
  KILN_ARG(std::vector<int64_t>, padding) = std::vector<int64_t>{0};
  KILN_ARG(bool, ceil_mode) = false;
  KILN_ARG(bool, count_include_pad) = true;
};
using AvgPool2dFuncOptions = AvgPoolFuncOptions;
inline Tensor avg_pool2d(const Tensor& x, const AvgPoolFuncOptions& o) {
  return kiln::avg_pool2d(x, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(),
                          o.count_include_pad());
}
inline Tensor adaptive_avg_pool2d(const Tensor& x, IntArrayRef output_size) {
  return kiln::adaptive_avg_pool2d(x, output_size);
}

struct PadFuncOptions {
  PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}  // NOLINT
  KILN_ARG(std::vector<int64_t>, pad);
  KILN_ARG(std::string, mode) = "constant";
  KILN_ARG(double, value) = 0;
};
inline Tensor pad(const Tensor& x, const PadFuncOptions& o) {
  return kiln::pad(x, o.pad(), o.mode(), o.value());
}

struct InterpolateFuncOptions {
  KILN_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  KILN_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  KILN_ARG(std::string, mode) = "nearest";
  KILN_ARG(std::optional<bool>, align_corners) = std::nullopt;
};
inline Tensor interpolate(const Tensor& x, const InterpolateFuncOptions& o = {}) {
  return kiln::interpolate(x, o.size(), o.scale_factor(), o.mode(), o.align_corners());
}

// ---- attention ----
inline Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                           const Tensor& attn_mask = {}, double dropout_p = 0,
                                           bool is_causal = false,
                                           std::optional<double> scale = std::nullopt,
                                           bool enable_gqa = false) {
  return kiln::scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale,
                                            enable_gqa);
}

}  // namespace kiln::nn::functional
