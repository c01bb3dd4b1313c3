#include "kiln/ops/quantized/util.h"

#include <cmath>
#include <limits>

#include "kiln/ops/ops.h"

namespace kiln::quantized {

Channels channels_along(const Tensor& t, int64_t axis) {
  Channels ch;
  ch.count = t.size(axis);
  for (int64_t d = axis + 1; d < t.dim(); ++d) ch.inner *= t.size(d);
  return ch;
}

void check_float_input(const char* op, const Tensor& x) {
  KILN_CHECK(x.is_floating_point(), op, ": expected a floating point input, but got ", x.dtype());
}

void check_int_input(const char* op, const Tensor& q) {
  const ScalarType t = q.dtype();
  KILN_CHECK(t == kInt8 || t == kUInt8 || t == kInt32, op,
             ": expected an int8, uint8 or int32 input, but got ", t);
}

void check_range(const char* op, ScalarType dtype, int64_t quant_min, int64_t quant_max) {
  KILN_CHECK(dtype == kInt8 || dtype == kUInt8 || dtype == kInt32, op,
             ": expected dtype int8, uint8 or int32, but got ", dtype);
  KILN_CHECK(
      integer_min(dtype) <= quant_min && quant_min <= quant_max && quant_max <= integer_max(dtype),
      op, ": expected quant_min <= quant_max within ", dtype, "'s range [", integer_min(dtype),
      ", ", integer_max(dtype), "], but got [", quant_min, ", ", quant_max, "]");
}

void check_scale_and_zero_point(const char* op, double scale, int64_t zero_point, int64_t quant_min,
                                int64_t quant_max) {
  KILN_CHECK(std::isfinite(scale) && scale > 0, op, ": expected a positive finite scale, but got ",
             scale);
  KILN_CHECK(quant_min <= zero_point && zero_point <= quant_max, op, ": zero point ", zero_point,
             " is outside [", quant_min, ", ", quant_max, "]");
}

int64_t check_channel_params(const char* op, const Tensor& self, const Tensor& scales,
                             const Tensor& zero_points, int64_t axis) {
  KILN_CHECK(self.dim() > 0, op,
             ": expected an input with at least one dim, but got a 0-dim tensor");
  KILN_CHECK(-self.dim() <= axis && axis < self.dim(), op, ": axis ", axis,
             " is out of range for an input of shape ", self.sym_sizes());
  if (axis < 0) axis += self.dim();
  KILN_CHECK(scales.dim() == 1 && zero_points.dim() == 1 &&
                 scales.sym_size(0) == self.sym_size(axis) &&
                 zero_points.sym_size(0) == self.sym_size(axis),
             op, ": expected scales and zero_points of shape [", self.sym_size(axis),
             "] (the input's size along axis ", axis, "), but got ", scales.sym_sizes(), " and ",
             zero_points.sym_sizes());
  KILN_CHECK(scales.is_floating_point() && is_integral(zero_points.dtype()), op,
             ": expected floating point scales and integer zero_points, but got ", scales.dtype(),
             " and ", zero_points.dtype());
  return axis;
}

std::vector<double> to_doubles(const Tensor& t) {
  const Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

std::vector<int64_t> to_int64s(const Tensor& t) {
  const Tensor c = t.to(kInt64).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

}  // namespace kiln::quantized
