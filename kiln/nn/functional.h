#pragma once
// kiln::nn::functional (libtorch's `namespace F = torch::nn::functional;`): the functional forms
// with libtorch's FuncOptions objects, e.g.
//   F::cross_entropy(logits, target, F::CrossEntropyFuncOptions().label_smoothing(0.1));
//   F::dropout(x, F::DropoutFuncOptions().p(0.2).training(is_training()));
// Each forwards to the op of the same name in namespace kiln.
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kiln/core/arg.h"
#include "kiln/nn/functional/activation.h"
#include "kiln/nn/functional/layers.h"
#include "kiln/nn/functional/loss.h"
#include "kiln/nn/functional/unpool.h"
#include "kiln/nn/functional/vision.h"
#include "kiln/nn/options/modes.h"
#include "kiln/nn/options/pooling.h"
#include "kiln/ops/ops.h"

namespace kiln::nn::functional {

inline Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {}) {
  return kiln::linear(input, weight, bias);
}

// ---- activations ----
inline Tensor relu(const Tensor& x) { return x.relu(); }
inline Tensor gelu(const Tensor& x, const std::string& approximate = "none") {
  return kiln::gelu(x, approximate);
}
inline Tensor silu(const Tensor& x) { return kiln::silu(x); }
inline Tensor sigmoid(const Tensor& x) { return x.sigmoid(); }
inline Tensor tanh(const Tensor& x) { return x.tanh(); }
struct LeakyReLUFuncOptions {
  KILN_ARG(double, negative_slope) = 1e-2;
  KILN_ARG(bool, inplace) = false;
};
inline Tensor leaky_relu(const Tensor& x, const LeakyReLUFuncOptions& o = {}) {
  return kiln::leaky_relu(x, o.negative_slope());
}
inline Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return kiln::leaky_relu(x, negative_slope);
}

inline Tensor prelu(const Tensor& x, const Tensor& weight) { return kiln::prelu(x, weight); }
// F::glu(x, 1) and F::glu(x, F::GLUFuncOptions(1)).
struct GLUFuncOptions {
  GLUFuncOptions(int64_t dim = -1) : dim_(dim) {}  // NOLINT
  KILN_ARG(int64_t, dim);
};
inline Tensor glu(const Tensor& x, const GLUFuncOptions& o = {}) { return kiln::glu(x, o.dim()); }
struct LocalResponseNormFuncOptions {
  LocalResponseNormFuncOptions(int64_t size) : size_(size) {}  // NOLINT
  KILN_ARG(int64_t, size);
  KILN_ARG(double, alpha) = 1e-4;
  KILN_ARG(double, beta) = 0.75;
  KILN_ARG(double, k) = 1.0;
};
inline Tensor local_response_norm(const Tensor& x, const LocalResponseNormFuncOptions& o) {
  return kiln::local_response_norm(x, o.size(), o.alpha(), o.beta(), o.k());
}

// F::softmax(x, 1) and F::softmax(x, F::SoftmaxFuncOptions(1).dtype(kFloat32)).
struct SoftmaxFuncOptions {
  SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  KILN_ARG(int64_t, dim);
  KILN_ARG(std::optional<ScalarType>, dtype) = std::nullopt;
};
using LogSoftmaxFuncOptions = SoftmaxFuncOptions;
inline Tensor softmax(const Tensor& x, const SoftmaxFuncOptions& o) {
  return kiln::softmax(x, o.dim(), o.dtype());
}
inline Tensor log_softmax(const Tensor& x, const LogSoftmaxFuncOptions& o) {
  return kiln::log_softmax(x, o.dim(), o.dtype());
}

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

inline Tensor max_pool1d(const Tensor& x, const MaxPool1dFuncOptions& o) {
  return kiln::max_pool1d(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
inline std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x,
                                                          const MaxPool1dFuncOptions& o) {
  return kiln::max_pool1d_with_indices(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(),
                                       o.ceil_mode());
}
inline Tensor max_pool2d(const Tensor& x, const MaxPool2dFuncOptions& o) {
  return kiln::max_pool2d(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
inline std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x,
                                                          const MaxPool2dFuncOptions& o) {
  return kiln::max_pool2d_with_indices(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(),
                                       o.ceil_mode());
}
inline Tensor max_pool3d(const Tensor& x, const MaxPool3dFuncOptions& o) {
  return kiln::max_pool3d(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
inline std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& x,
                                                          const MaxPool3dFuncOptions& o) {
  return kiln::max_pool3d_with_indices(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(),
                                       o.ceil_mode());
}
inline Tensor avg_pool1d(const Tensor& x, const AvgPool1dFuncOptions& o) {
  return kiln::avg_pool1d(x, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(),
                          o.count_include_pad());
}
inline Tensor avg_pool2d(const Tensor& x, const AvgPool2dFuncOptions& o) {
  return kiln::avg_pool2d(x, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(),
                          o.count_include_pad(), o.divisor_override());
}
inline Tensor avg_pool3d(const Tensor& x, const AvgPool3dFuncOptions& o) {
  return kiln::avg_pool3d(x, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(),
                          o.count_include_pad(), o.divisor_override());
}
inline Tensor adaptive_avg_pool1d(const Tensor& x, const AdaptiveAvgPool1dFuncOptions& o) {
  return kiln::adaptive_avg_pool1d(x, o.output_size());
}
inline Tensor adaptive_avg_pool2d(const Tensor& x, const AdaptiveAvgPool2dFuncOptions& o) {
  return kiln::adaptive_avg_pool2d(x, o.output_size());
}
inline Tensor adaptive_avg_pool2d(const Tensor& x, IntArrayRef output_size) {
  return kiln::adaptive_avg_pool2d(x, output_size);
}
inline Tensor adaptive_avg_pool3d(const Tensor& x, const AdaptiveAvgPool3dFuncOptions& o) {
  return kiln::adaptive_avg_pool3d(x, o.output_size());
}
inline Tensor adaptive_max_pool1d(const Tensor& x, const AdaptiveMaxPool1dFuncOptions& o) {
  return std::get<0>(kiln::adaptive_max_pool1d(x, o.output_size()));
}
inline std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(
    const Tensor& x, const AdaptiveMaxPool1dFuncOptions& o) {
  return kiln::adaptive_max_pool1d(x, o.output_size());
}
inline Tensor adaptive_max_pool2d(const Tensor& x, const AdaptiveMaxPool2dFuncOptions& o) {
  return std::get<0>(kiln::adaptive_max_pool2d(x, o.output_size()));
}
inline std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(
    const Tensor& x, const AdaptiveMaxPool2dFuncOptions& o) {
  return kiln::adaptive_max_pool2d(x, o.output_size());
}
inline Tensor adaptive_max_pool3d(const Tensor& x, const AdaptiveMaxPool3dFuncOptions& o) {
  return std::get<0>(kiln::adaptive_max_pool3d(x, o.output_size()));
}
inline std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(
    const Tensor& x, const AdaptiveMaxPool3dFuncOptions& o) {
  return kiln::adaptive_max_pool3d(x, o.output_size());
}

struct PadFuncOptions {
  PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}  // NOLINT
  KILN_ARG(std::vector<int64_t>, pad);
  KILN_ARG(std::string, mode) = "constant";
  KILN_ARG(double, value) = 0;
};
// value applies to constant padding only (kiln::pad refuses a value with the other modes).
inline Tensor pad(const Tensor& x, const PadFuncOptions& o) {
  return kiln::pad(x, o.pad(), o.mode(),
                   o.mode() == "constant" ? std::optional<double>(o.value()) : std::nullopt);
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
