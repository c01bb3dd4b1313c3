// Quantized tensors over the registry's quantize ops: quantize_per_tensor/_per_channel wrap the
// integers they produce with a Quantizer; dequantize and int_repr take them apart again.
#include "kiln/ops/creation.h"
#include "kiln/ops/quantized.h"
#include "kiln/ops/quantized/util.h"

namespace kiln {
namespace {

const Quantizer& checked_quantizer(const Tensor& t, const char* op) {
  const Quantizer* q = quantizer_of(t);
  KILN_CHECK(q != nullptr, op, ": expected a quantized tensor, but got ",
             t.defined() ? dtype_name(t.dtype()) : "an undefined tensor");
  return *q;
}

const Quantizer& per_channel_quantizer(const Tensor& t, const char* op) {
  const Quantizer& q = checked_quantizer(t, op);
  KILN_CHECK(q.per_channel(), op, ": expected a per-channel quantized tensor, but got ",
             q.describe());
  return q;
}

const Quantizer& per_tensor_quantizer(const Tensor& t, const char* op) {
  const Quantizer& q = checked_quantizer(t, op);
  KILN_CHECK(!q.per_channel(), op, ": expected a per-tensor quantized tensor, but got ",
             q.describe());
  return q;
}

}  // namespace

Tensor quantize_per_tensor(const Tensor& self, double scale, int64_t zero_point, ScalarType dtype) {
  auto q = std::make_shared<const Quantizer>(dtype, scale, zero_point);
  const Tensor values = quantize_per_tensor_affine(self, scale, zero_point, q->quant_min(),
                                                   q->quant_max(), underlying_int_type(dtype));
  return make_quantized(values, std::move(q));
}

Tensor quantize_per_channel(const Tensor& self, const Tensor& scales, const Tensor& zero_points,
                            int64_t axis, ScalarType dtype) {
  KILN_CHECK(is_quantized(dtype),
             "quantize_per_channel: expected a quantized dtype (qint8, quint8, qint32), but got ",
             dtype);
  const int64_t ax =
      quantized::check_channel_params("quantize_per_channel", self, scales, zero_points, axis);
  auto q = std::make_shared<const Quantizer>(dtype, quantized::to_doubles(scales),
                                             quantized::to_int64s(zero_points), ax);
  const Tensor values = quantize_per_channel_affine(self, scales, zero_points, ax, q->quant_min(),
                                                    q->quant_max(), underlying_int_type(dtype));
  return make_quantized(values, std::move(q));
}

Tensor dequantize(const Tensor& self) {
  const Quantizer* q = quantizer_of(self);
  if (!q) return self;
  const Tensor values = quantized_values(self);
  if (!q->per_channel())
    return dequantize_per_tensor_affine(values, q->scales()[0], q->zero_points()[0]);
  return dequantize_per_channel_affine(values, self.q_per_channel_scales(),
                                       self.q_per_channel_zero_points(), q->axis());
}

Tensor int_repr(const Tensor& self) {
  checked_quantizer(self, "int_repr");
  return quantized_values(self).clone();
}

QScheme Tensor::qscheme() const { return checked_quantizer(*this, "qscheme").qscheme(); }
double Tensor::q_scale() const { return per_tensor_quantizer(*this, "q_scale").scales()[0]; }
int64_t Tensor::q_zero_point() const {
  return per_tensor_quantizer(*this, "q_zero_point").zero_points()[0];
}
Tensor Tensor::q_per_channel_scales() const {
  return tensor(per_channel_quantizer(*this, "q_per_channel_scales").scales(), kFloat64);
}
Tensor Tensor::q_per_channel_zero_points() const {
  return tensor(per_channel_quantizer(*this, "q_per_channel_zero_points").zero_points());
}
int64_t Tensor::q_per_channel_axis() const {
  return per_channel_quantizer(*this, "q_per_channel_axis").axis();
}
Tensor Tensor::int_repr() const { return kiln::int_repr(*this); }
Tensor Tensor::dequantize() const { return kiln::dequantize(*this); }

}  // namespace kiln
