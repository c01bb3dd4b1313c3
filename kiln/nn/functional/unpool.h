#pragma once
// F::max_unpool1d/2d/3d (libtorch's spellings): the output size comes from the options (the
// pooling's kernel, stride and padding) unless given, then max_unpool2d/3d place the values.
#include <optional>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/nn/options/pooling.h"

namespace kiln::nn::functional {

// The unpooled spatial sizes: (in - 1) * stride - 2 * padding + kernel per dim, or output_size
// (D values, or N, C and D values) checked to lie strictly within a stride of those.
template <size_t D>
std::vector<int64_t> unpool_output_size(const Tensor& input, const ExpandingArray<D>& kernel_size,
                                        const ExpandingArray<D>& stride,
                                        const ExpandingArray<D>& padding,
                                        const std::optional<std::vector<int64_t>>& output_size);

Tensor max_unpool1d(const Tensor& input, const Tensor& indices,
                    const MaxUnpool1dFuncOptions& options);
Tensor max_unpool2d(const Tensor& input, const Tensor& indices,
                    const MaxUnpool2dFuncOptions& options);
Tensor max_unpool3d(const Tensor& input, const Tensor& indices,
                    const MaxUnpool3dFuncOptions& options);

}  // namespace kiln::nn::functional
