// prelu, glu and local_response_norm: composed from registered ops.
#include <vector>

#include "kiln/ops/ops.h"

namespace kiln {

Tensor prelu(const Tensor& input, const Tensor& weight) {
  KILN_CHECK(input.defined() && weight.defined(), "prelu: input and weight must be defined");
  KILN_CHECK(input.is_floating_point() && weight.dtype() == input.dtype(),
             "prelu: expected floating-point input and weight of one dtype, got ", input.dtype(),
             " and ", weight.dtype());
  const int64_t channels = input.dim() >= 2 ? input.size(1) : 1;
  const int64_t count = weight.numel();
  KILN_CHECK(weight.dim() <= 1, "prelu: weight must be a scalar or 1-D, got shape ",
             weight.sizes());
  KILN_CHECK(count == 1 || count == channels,
             "prelu: Mismatch of parameter numbers and input "
             "channel size. Found parameter numbers = ",
             count, " and channel size = ", channels, " (input of shape ", input.sizes(), ")");
  Tensor w = weight;
  if (count != 1) {
    std::vector<int64_t> shape(static_cast<size_t>(input.dim() - 1), 1);
    shape[0] = channels;
    w = weight.reshape(shape);
  } else {
    w = weight.reshape({});
  }
  return where(input > 0, input, w * input);
}

Tensor glu(const Tensor& input, int64_t dim) {
  KILN_CHECK(input.dim() > 0, "glu: does not support scalars because halving size must be even");
  const int64_t d = dim < 0 ? dim + input.dim() : dim;
  KILN_CHECK(d >= 0 && d < input.dim(), "glu: dim ", dim, " is out of range for an input of ",
             input.dim(), " dims");
  KILN_CHECK(input.size(d) % 2 == 0, "glu: Halving dimension must be even, but dimension ", d,
             " is size ", input.size(d));
  const int64_t half = input.size(d) / 2;
  return input.narrow(d, 0, half) * input.narrow(d, half, half).sigmoid();
}

Tensor local_response_norm(const Tensor& input, int64_t size, double alpha, double beta, double k) {
  KILN_CHECK(input.dim() >= 3,
             "local_response_norm: Expected 3D or higher dimensionality input "
             "(got ",
             input.dim(), " dimensions)");
  KILN_CHECK(size > 0, "local_response_norm: size must be positive, got ", size);
  if (input.numel() == 0) return input.clone();
  // Mean of x^2 over a window of `size` channels (zero-padded), as a pooling over dim 1 of
  // [N, 1, C, rest].
  Tensor square = (input * input).reshape({input.size(0), 1, input.size(1), -1});
  square = constant_pad_nd(square, {0, 0, size / 2, (size - 1) / 2});
  Tensor div = avg_pool2d(square, {size, 1}, {1, 1}).reshape(input.sizes());
  return input / (div * alpha + k).pow(beta);
}

}  // namespace kiln
