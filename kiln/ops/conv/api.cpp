// conv1d/2d/3d and conv_transpose1d/2d/3d: argument checks and "same"/"valid" padding on top of
// the `convolution` entry.
#include "kiln/ops/conv.h"
#include "kiln/ops/conv/util.h"
#include "kiln/ops/ops.h"

namespace kiln {
namespace {

const char* conv_name(int64_t nd, bool transposed) {
  static const char* names[2][3] = {{"conv1d", "conv2d", "conv3d"},
                                    {"conv_transpose1d", "conv_transpose2d", "conv_transpose3d"}};
  return names[transposed][nd - 1];
}

void check_input_rank(const Tensor& input, int64_t nd, bool transposed) {
  const char* op = conv_name(nd, transposed);
  KILN_CHECK(input.dim() == nd + 1 || input.dim() == nd + 2, op, ": expected a ", nd + 1,
             "-D (unbatched) or ", nd + 2, "-D (batched) input, but got input of size ",
             input.sym_sizes());
}

Tensor conv_nd(int64_t nd, const Tensor& input, const Tensor& weight, const Tensor& bias,
               IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  check_input_rank(input, nd, false);
  const char* op = conv_name(nd, false);
  return convolution(input, weight, bias, conv::expand(op, "stride", stride, nd),
                     conv::expand(op, "padding", padding, nd),
                     conv::expand(op, "dilation", dilation, nd), false,
                     std::vector<int64_t>(static_cast<size_t>(nd), 0), groups);
}

// PyTorch's _convolution_mode: "same" pads d*(k-1) in total per dim, the odd extra on the high
// side (by padding the input itself, since `convolution` pads symmetrically).
}  // namespace

Tensor detail::conv_padding_mode(int64_t nd, const Tensor& input, const Tensor& weight,
                                 const Tensor& bias, IntArrayRef stride, std::string_view padding,
                                 IntArrayRef dilation, int64_t groups) {
  check_input_rank(input, nd, false);
  const char* op = conv_name(nd, false);
  if (padding == "valid") return conv_nd(nd, input, weight, bias, stride, 0, dilation, groups);
  KILN_CHECK(padding == "same", op, ": invalid padding string '", padding,
             "', expected one of 'valid' or 'same'");
  const std::vector<int64_t> s = conv::expand(op, "stride", stride, nd);
  for (int64_t v : s)
    KILN_CHECK(
        v == 1, op,
        ": padding='same' is not supported for strided convolutions, got stride=", IntArrayRef(s));
  const std::vector<int64_t> dil = conv::expand(op, "dilation", dilation, nd);
  KILN_CHECK(weight.dim() == nd + 2, op, ": expected ", nd + 2, "-dimensional weight, got ",
             weight.sym_sizes());
  std::vector<int64_t> pad(static_cast<size_t>(nd)), extra;  // extra: (low, high) from last dim
  bool asymmetric = false;
  for (int64_t d = nd - 1; d >= 0; --d) {
    const int64_t total = dil[d] * (weight.sym_size(d + 2).guard_int() - 1);
    pad[d] = total / 2;
    extra.push_back(0);
    extra.push_back(total - 2 * pad[d]);
    asymmetric = asymmetric || total % 2 != 0;
  }
  Tensor x = asymmetric ? kiln::pad(input, extra) : input;
  return conv_nd(nd, x, weight, bias, s, pad, dil, groups);
}

namespace {

Tensor conv_transpose_nd(int64_t nd, const Tensor& input, const Tensor& weight, const Tensor& bias,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding,
                         int64_t groups, IntArrayRef dilation) {
  check_input_rank(input, nd, true);
  const char* op = conv_name(nd, true);
  return convolution(input, weight, bias, conv::expand(op, "stride", stride, nd),
                     conv::expand(op, "padding", padding, nd),
                     conv::expand(op, "dilation", dilation, nd), true,
                     conv::expand(op, "output_padding", output_padding, nd), groups);
}

}  // namespace

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd(1, input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd(2, input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd(3, input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding,
                        int64_t groups, IntArrayRef dilation) {
  return conv_transpose_nd(1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation);
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding,
                        int64_t groups, IntArrayRef dilation) {
  return conv_transpose_nd(2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation);
}
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding,
                        int64_t groups, IntArrayRef dilation) {
  return conv_transpose_nd(3, input, weight, bias, stride, padding, output_padding, groups,
                           dilation);
}

}  // namespace kiln
