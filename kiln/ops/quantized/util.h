#pragma once
// Checks and helpers the quantized ops share.
#include <vector>

#include "kiln/core/quantizer.h"
#include "kiln/ops/registry.h"

namespace kiln::quantized {

// The channel of flat element i of a contiguous tensor with per-channel parameters along an
// axis: (i / inner) % count. Per tensor: count 1.
struct Channels {
  int64_t count = 1, inner = 1;
  int64_t of(int64_t i) const { return count == 1 ? 0 : (i / inner) % count; }
};
Channels channels_along(const Tensor& t, int64_t axis);

void check_float_input(const char* op, const Tensor& x);
void check_int_input(const char* op, const Tensor& q);
// dtype is int8, uint8 or int32 and [quant_min, quant_max] a non-empty part of its range.
void check_range(const char* op, ScalarType dtype, int64_t quant_min, int64_t quant_max);
void check_scale_and_zero_point(const char* op, double scale, int64_t zero_point, int64_t quant_min,
                                int64_t quant_max);
// Per-channel parameters: 1-D scales (floating) and zero points (integer) of self.size(axis)
// entries; returns the wrapped axis.
int64_t check_channel_params(const char* op, const Tensor& self, const Tensor& scales,
                             const Tensor& zero_points, int64_t axis);
// As float64 and int64 vectors (after the checks above).
std::vector<double> to_doubles(const Tensor& t);
std::vector<int64_t> to_int64s(const Tensor& t);

}  // namespace kiln::quantized
