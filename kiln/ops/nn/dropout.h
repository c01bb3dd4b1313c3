#pragma once
// native_dropout's modes and the scalars every device's kernel derives from them
// (kiln/ops/nn/dropout.cpp; kiln/backend/cuda/random.cpp).
#include <cmath>
#include <cstdint>

namespace kiln::dropout_util {

enum Mode : int64_t { kPlain = 0, kFeature = 1, kAlpha = 2, kFeatureAlpha = 3 };

// SELU's negative saturation value, -scale * alpha: what the alpha variants drop elements to.
constexpr double kAlphaPrime = -1.7580993408473766;

inline bool is_feature(int64_t mode) { return mode == kFeature || mode == kFeatureAlpha; }
inline bool is_alpha(int64_t mode) { return mode == kAlpha || mode == kFeatureAlpha; }

// Kept elements' multiplier: 1 / (1 - p), or SELU's a for the alpha variants (0 when p is 1).
inline double keep_scale(double p, int64_t mode) {
  if (p >= 1) return 0.0;
  return is_alpha(mode) ? 1.0 / std::sqrt((kAlphaPrime * kAlphaPrime * p + 1) * (1 - p))
                        : 1.0 / (1 - p);
}

// The alpha variants' out = (x + alpha') * noise + shift: shift = alpha' * keep_scale * (p - 1).
inline double alpha_shift(double p, int64_t mode) {
  return kAlphaPrime * keep_scale(p, mode) * (p - 1);
}

}  // namespace kiln::dropout_util
