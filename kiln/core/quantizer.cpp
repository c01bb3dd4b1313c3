#include "kiln/core/quantizer.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "kiln/core/error.h"

namespace kiln {

std::string_view qscheme_name(QScheme s) {
  switch (s) {
    case kPerTensorAffine:
      return "per_tensor_affine";
    case kPerChannelAffine:
      return "per_channel_affine";
    case kPerTensorSymmetric:
      return "per_tensor_symmetric";
    case kPerChannelSymmetric:
      return "per_channel_symmetric";
  }
  return "unknown";
}

int64_t integer_min(ScalarType t) {
  return t == kInt8 ? -128 : t == kUInt8 ? 0 : std::numeric_limits<int32_t>::min();
}
int64_t integer_max(ScalarType t) {
  return t == kInt8 ? 127 : t == kUInt8 ? 255 : std::numeric_limits<int32_t>::max();
}

namespace {

ScalarType stored_type(ScalarType qdtype) {
  KILN_CHECK(is_quantized(qdtype),
             "quantize: expected a quantized dtype (qint8, quint8, qint32), but got ", qdtype);
  return underlying_int_type(qdtype);
}

}  // namespace

int64_t quant_min_of(ScalarType qdtype) { return integer_min(stored_type(qdtype)); }
int64_t quant_max_of(ScalarType qdtype) { return integer_max(stored_type(qdtype)); }

namespace {

void check_params(ScalarType dtype, double scale, int64_t zero_point) {
  KILN_CHECK(std::isfinite(scale) && scale > 0,
             "quantize: expected a positive finite scale, but got ", scale);
  KILN_CHECK(zero_point >= quant_min_of(dtype) && zero_point <= quant_max_of(dtype),
             "quantize: zero point ", zero_point, " is outside ", dtype, "'s range [",
             quant_min_of(dtype), ", ", quant_max_of(dtype), "]");
}

}  // namespace

Quantizer::Quantizer(ScalarType dtype, double scale, int64_t zero_point)
    : dtype_(dtype), scales_{scale}, zero_points_{zero_point} {
  check_params(dtype, scale, zero_point);
}

Quantizer::Quantizer(ScalarType dtype, std::vector<double> scales, std::vector<int64_t> zero_points,
                     int64_t axis)
    : dtype_(dtype), scales_(std::move(scales)), zero_points_(std::move(zero_points)), axis_(axis) {
  KILN_CHECK(scales_.size() == zero_points_.size(), "quantize_per_channel: ", scales_.size(),
             " scales but ", zero_points_.size(), " zero points");
  KILN_CHECK(axis >= 0, "quantize_per_channel: expected a non-negative axis, but got ", axis);
  for (size_t i = 0; i < scales_.size(); ++i) check_params(dtype, scales_[i], zero_points_[i]);
}

int64_t Quantizer::quant_min() const { return quant_min_of(dtype_); }
int64_t Quantizer::quant_max() const { return quant_max_of(dtype_); }

std::string Quantizer::describe() const {
  std::ostringstream os;
  os << "a quantized tensor (" << dtype_ << ", ";
  if (per_channel())
    os << scales_.size() << " scales and zero points along axis " << axis_;
  else
    os << "scale " << scales_[0] << ", zero point " << zero_points_[0];
  os << ")";
  return os.str();
}

const Quantizer* quantizer_of(const Tensor& t) {
  if (!t.defined() || !is_quantized(t.dtype())) return nullptr;
  return dynamic_cast<const Quantizer*>(t.impl()->extension().get());
}

Tensor make_quantized(const Tensor& values, std::shared_ptr<const Quantizer> quantizer) {
  KILN_CHECK(values.defined() && values.dtype() == underlying_int_type(quantizer->dtype()),
             "quantize: ", quantizer->dtype(), " stores ", underlying_int_type(quantizer->dtype()),
             " values, but got ", values.defined() ? dtype_name(values.dtype()) : "none");
  if (quantizer->per_channel()) {
    KILN_CHECK(
        quantizer->axis() < values.dim() &&
            values.size(quantizer->axis()) == static_cast<int64_t>(quantizer->scales().size()),
        "quantize_per_channel: ", quantizer->scales().size(), " scales do not match axis ",
        quantizer->axis(), " of shape ", values.sizes());
  }
  const TensorImpl& v = *values.impl();
  auto impl = std::make_shared<TensorImpl>(v.storage(), quantizer->dtype(), v.sym_sizes(),
                                           v.sym_strides(), v.sym_storage_offset());
  impl->set_extension(std::move(quantizer));
  return Tensor(std::move(impl));
}

Tensor quantized_values(const Tensor& q) {
  const Quantizer* quantizer = quantizer_of(q);
  KILN_CHECK(quantizer != nullptr, "int_repr: expected a quantized tensor, but got ",
             q.defined() ? dtype_name(q.dtype()) : "an undefined tensor");
  const TensorImpl& v = *q.impl();
  return Tensor(std::make_shared<TensorImpl>(v.storage(), underlying_int_type(q.dtype()),
                                             v.sym_sizes(), v.sym_strides(),
                                             v.sym_storage_offset()));
}

}  // namespace kiln
