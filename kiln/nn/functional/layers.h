#pragma once
// More of kiln::nn::functional with libtorch's FuncOptions: batch/instance/group norm, distances,
// the dropout variants, transposed convolutions and pixel shuffles. Each forwards to the op of
// that name in namespace kiln.
#include <optional>
#include <vector>

#include "kiln/core/arg.h"
#include "kiln/ops/ops.h"

namespace kiln::nn::functional {

// ---- normalisation ----
struct BatchNormFuncOptions {
  KILN_ARG(Tensor, weight) = Tensor();
  KILN_ARG(Tensor, bias) = Tensor();
  KILN_ARG(bool, training) = false;
  KILN_ARG(std::optional<double>, momentum) = 0.1;
  KILN_ARG(double, eps) = 1e-5;
};
inline Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                         const BatchNormFuncOptions& o = {}) {
  return kiln::batch_norm(x, o.weight(), o.bias(), running_mean, running_var, o.training(),
                          o.momentum().value_or(0.1), o.eps());
}

struct InstanceNormFuncOptions {
  KILN_ARG(Tensor, running_mean) = Tensor();
  KILN_ARG(Tensor, running_var) = Tensor();
  KILN_ARG(Tensor, weight) = Tensor();
  KILN_ARG(Tensor, bias) = Tensor();
  KILN_ARG(bool, use_input_stats) = true;
  KILN_ARG(double, momentum) = 0.1;
  KILN_ARG(double, eps) = 1e-5;
};
inline Tensor instance_norm(const Tensor& x, const InstanceNormFuncOptions& o = {}) {
  return kiln::instance_norm(x, o.weight(), o.bias(), o.running_mean(), o.running_var(),
                             o.use_input_stats(), o.momentum(), o.eps());
}

struct GroupNormFuncOptions {
  GroupNormFuncOptions(int64_t num_groups) : num_groups_(num_groups) {}  // NOLINT
  KILN_ARG(int64_t, num_groups);
  KILN_ARG(Tensor, weight) = Tensor();
  KILN_ARG(Tensor, bias) = Tensor();
  KILN_ARG(double, eps) = 1e-5;
};
inline Tensor group_norm(const Tensor& x, const GroupNormFuncOptions& o) {
  return kiln::group_norm(x, o.num_groups(), o.weight(), o.bias(), o.eps());
}

// ---- distances ----
struct CosineSimilarityFuncOptions {
  KILN_ARG(int64_t, dim) = 1;
  KILN_ARG(double, eps) = 1e-8;
};
inline Tensor cosine_similarity(const Tensor& x1, const Tensor& x2,
                                const CosineSimilarityFuncOptions& o = {}) {
  return kiln::cosine_similarity(x1, x2, o.dim(), o.eps());
}
struct PairwiseDistanceFuncOptions {
  KILN_ARG(double, p) = 2.0;
  KILN_ARG(double, eps) = 1e-6;
  KILN_ARG(bool, keepdim) = false;
};
inline Tensor pairwise_distance(const Tensor& x1, const Tensor& x2,
                                const PairwiseDistanceFuncOptions& o = {}) {
  return kiln::pairwise_distance(x1, x2, o.p(), o.eps(), o.keepdim());
}

// ---- dropout variants (DropoutFuncOptions: p, training, inplace) ----
struct FeatureDropoutFuncOptions {
  KILN_ARG(double, p) = 0.5;
  KILN_ARG(bool, training) = true;
  KILN_ARG(bool, inplace) = false;
};
using Dropout2dFuncOptions = FeatureDropoutFuncOptions;
using Dropout3dFuncOptions = FeatureDropoutFuncOptions;
inline Tensor dropout2d(const Tensor& x, const Dropout2dFuncOptions& o = {}) {
  return kiln::feature_dropout(x, o.p(), o.training());
}
inline Tensor dropout3d(const Tensor& x, const Dropout3dFuncOptions& o = {}) {
  return kiln::feature_dropout(x, o.p(), o.training());
}
struct AlphaDropoutFuncOptions {
  KILN_ARG(double, p) = 0.5;
  KILN_ARG(bool, training) = false;
  KILN_ARG(bool, inplace) = false;
};
using FeatureAlphaDropoutFuncOptions = AlphaDropoutFuncOptions;
inline Tensor alpha_dropout(const Tensor& x, const AlphaDropoutFuncOptions& o = {}) {
  return kiln::alpha_dropout(x, o.p(), o.training());
}
inline Tensor feature_alpha_dropout(const Tensor& x, const FeatureAlphaDropoutFuncOptions& o = {}) {
  return kiln::feature_alpha_dropout(x, o.p(), o.training());
}

// ---- transposed convolutions and pixel shuffles ----
struct ConvTransposeFuncOptions {
  KILN_ARG(Tensor, bias) = Tensor();
  KILN_ARG(std::vector<int64_t>, stride) = std::vector<int64_t>{1};
  KILN_ARG(std::vector<int64_t>, padding) = std::vector<int64_t>{0};
  KILN_ARG(std::vector<int64_t>, output_padding) = std::vector<int64_t>{0};
  KILN_ARG(int64_t, groups) = 1;
  KILN_ARG(std::vector<int64_t>, dilation) = std::vector<int64_t>{1};
};
using ConvTranspose1dFuncOptions = ConvTransposeFuncOptions;
using ConvTranspose2dFuncOptions = ConvTransposeFuncOptions;
using ConvTranspose3dFuncOptions = ConvTransposeFuncOptions;
inline Tensor conv_transpose1d(const Tensor& x, const Tensor& w,
                               const ConvTransposeFuncOptions& o = {}) {
  return kiln::conv_transpose1d(x, w, o.bias(), o.stride(), o.padding(), o.output_padding(),
                                o.groups(), o.dilation());
}
inline Tensor conv_transpose2d(const Tensor& x, const Tensor& w,
                               const ConvTransposeFuncOptions& o = {}) {
  return kiln::conv_transpose2d(x, w, o.bias(), o.stride(), o.padding(), o.output_padding(),
                                o.groups(), o.dilation());
}
inline Tensor conv_transpose3d(const Tensor& x, const Tensor& w,
                               const ConvTransposeFuncOptions& o = {}) {
  return kiln::conv_transpose3d(x, w, o.bias(), o.stride(), o.padding(), o.output_padding(),
                                o.groups(), o.dilation());
}

struct PixelShuffleFuncOptions {
  PixelShuffleFuncOptions(int64_t upscale_factor) : upscale_factor_(upscale_factor) {}  // NOLINT
  KILN_ARG(int64_t, upscale_factor);
};
inline Tensor pixel_shuffle(const Tensor& x, const PixelShuffleFuncOptions& o) {
  return kiln::pixel_shuffle(x, o.upscale_factor());
}
struct PixelUnshuffleFuncOptions {
  PixelUnshuffleFuncOptions(int64_t downscale_factor)  // NOLINT
      : downscale_factor_(downscale_factor) {}
  KILN_ARG(int64_t, downscale_factor);
};
inline Tensor pixel_unshuffle(const Tensor& x, const PixelUnshuffleFuncOptions& o) {
  return kiln::pixel_unshuffle(x, o.downscale_factor());
}

}  // namespace kiln::nn::functional
