#pragma once
// Quantizer: the parameters of a quantized tensor (dtype qint8, quint8 or qint32), kept as its
// TensorImpl's extension. Its storage holds the integers; real value = (q - zero_point) * scale,
// with one scale and zero point for the tensor or one per index along `axis`.
//
// Note [Quantized tensors reach no kernel]: dispatch refuses them as inputs to every op, naming
// the tensor's parameters; the quantized ops (kiln/ops/quantized) take the stored integers and
// the parameters as separate arguments, as PyTorch 2's decomposed quantized ops do, so that every
// registry op sees only plain dtypes (and the op table, compile and vmap cover them).
#include <memory>
#include <string>
#include <vector>

#include "kiln/core/qscheme.h"
#include "kiln/core/tensor.h"

namespace kiln {

class Quantizer final : public TensorExtension {
 public:
  // Per tensor (qscheme per_tensor_affine).
  Quantizer(ScalarType dtype, double scale, int64_t zero_point);
  // Per channel along `axis` (qscheme per_channel_affine).
  Quantizer(ScalarType dtype, std::vector<double> scales, std::vector<int64_t> zero_points,
            int64_t axis);

  ScalarType dtype() const { return dtype_; }
  QScheme qscheme() const { return per_channel() ? kPerChannelAffine : kPerTensorAffine; }
  bool per_channel() const { return axis_ >= 0; }
  // Per tensor: one entry each. Per channel: one per index along axis().
  const std::vector<double>& scales() const { return scales_; }
  const std::vector<int64_t>& zero_points() const { return zero_points_; }
  int64_t axis() const { return axis_; }  // -1 per tensor
  // The integer range of dtype(): [-128, 127], [0, 255] or int32's.
  int64_t quant_min() const;
  int64_t quant_max() const;

  std::string describe() const override;  // "a quantized tensor (qint8, scale 0.1, zero point 0)"

 private:
  ScalarType dtype_;
  std::vector<double> scales_;
  std::vector<int64_t> zero_points_;
  int64_t axis_ = -1;
};

// The integer range a quantized dtype stores, and that of a plain int8, uint8 or int32.
int64_t quant_min_of(ScalarType qdtype);
int64_t quant_max_of(ScalarType qdtype);
int64_t integer_min(ScalarType int_type);
int64_t integer_max(ScalarType int_type);

// The quantizer of `t`, or null when t is not quantized.
const Quantizer* quantizer_of(const Tensor& t);
// `values` (int8, uint8 or int32, the quantizer's underlying type) as a quantized tensor sharing
// its storage.
Tensor make_quantized(const Tensor& values, std::shared_ptr<const Quantizer> quantizer);
// The integers a quantized tensor stores, sharing its storage (int_repr() copies them).
Tensor quantized_values(const Tensor& q);

}  // namespace kiln
