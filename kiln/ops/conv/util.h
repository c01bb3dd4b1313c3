#pragma once
// Shared pieces of the convolution entries: attributes, output sizes and kernel geometry.
#include <vector>

#include "kiln/backend/cpu/conv_geometry.h"
#include "kiln/ops/registry.h"

namespace kiln::conv {

// Attributes of `convolution`, each list expanded to one value per spatial dim.
struct Params {
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;
};
// Attrs of `convolution`: stride, padding, dilation, transposed, output_padding, groups.
Params params(const char* op, const Attrs& a, int64_t nd);
Attrs attrs(const Params& p);

// A list of 1 or nd values expanded to nd values; `what` names it in the error.
std::vector<int64_t> expand(const char* op, const char* what, IntArrayRef v, int64_t nd);

// Output sizes of `convolution` (PyTorch's checks and messages).
SymShape output_sizes(const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias,
                      const Params& p);

// The geometry of the non-transposed convolution from `in` sizes [N, C_in, *] to `out` sizes
// [N, C_out, *] with weight sizes [C_out, C_in/G, k...] (a transposed convolution runs the
// backward_data kernel of the convolution from its output to its input).
cpu::ConvGeometry geometry(IntArrayRef in, IntArrayRef out, IntArrayRef weight, const Params& p);

// The compute dtype of the kernels for `dtype`: float32/float64 themselves, bfloat16 itself when
// oneDNN has an optimised bfloat16 convolution on this CPU, otherwise float32.
ScalarType compute_dtype(ScalarType dtype);

// Gradient helpers written with the registry entries (so they are differentiable again).
// Gradient of conv(x, w) w.r.t. x, for x of sizes `input_sizes`: a transposed convolution.
Tensor data_grad(const Tensor& grad, const Tensor& weight, IntArrayRef input_sizes,
                 const Params& p);
// Gradient of conv(x, w) w.r.t. w for upstream `grad`.
Tensor weight_grad(const Tensor& grad, const Tensor& input, IntArrayRef weight_sizes,
                   const Params& p);
// Non-transposed convolution without bias; spatial dims larger than `sizes` are cut to them.
Tensor forward_fit(const Tensor& x, const Tensor& weight, IntArrayRef sizes, const Params& p);

}  // namespace kiln::conv
