#pragma once
// How a quantized tensor maps its integers to real values (c10's QScheme): one scale and zero
// point for the whole tensor, or one per slice along an axis.
#include <cstdint>
#include <string_view>

namespace kiln {

enum class QScheme : int8_t {
  PerTensorAffine,
  PerChannelAffine,
  PerTensorSymmetric,
  PerChannelSymmetric,
};
constexpr QScheme kPerTensorAffine = QScheme::PerTensorAffine;
constexpr QScheme kPerChannelAffine = QScheme::PerChannelAffine;
constexpr QScheme kPerTensorSymmetric = QScheme::PerTensorSymmetric;
constexpr QScheme kPerChannelSymmetric = QScheme::PerChannelSymmetric;

constexpr bool is_per_channel(QScheme s) {
  return s == kPerChannelAffine || s == kPerChannelSymmetric;
}
constexpr bool is_symmetric(QScheme s) {
  return s == kPerTensorSymmetric || s == kPerChannelSymmetric;
}
// "per_tensor_affine", ... (torch's names).
std::string_view qscheme_name(QScheme s);

}  // namespace kiln
