#include "kiln/nn/functional/unpool.h"

#include "kiln/ops/conv.h"
#include "kiln/ops/ops.h"

namespace kiln::nn::functional {

template <size_t D>
std::vector<int64_t> unpool_output_size(const Tensor& input, const ExpandingArray<D>& kernel_size,
                                        const ExpandingArray<D>& stride,
                                        const ExpandingArray<D>& padding,
                                        const std::optional<std::vector<int64_t>>& output_size) {
  const auto d = static_cast<int64_t>(D);
  const char* op = D == 1 ? "max_unpool1d" : D == 2 ? "max_unpool2d" : "max_unpool3d";
  KILN_CHECK(input.dim() == d + 1 || input.dim() == d + 2, op, ": expected ", d + 1, "D or ", d + 2,
             "D input, but got input of size: ", input.sym_sizes());
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < D; ++i) {
    const int64_t in = input.sym_size(input.dim() - d + static_cast<int64_t>(i)).guard_int();
    sizes.push_back((in - 1) * stride[i] - 2 * padding[i] + kernel_size[i]);
  }
  if (!output_size) return sizes;
  std::vector<int64_t> given = *output_size;
  if (given.size() == D + 2) given.erase(given.begin(), given.begin() + 2);
  KILN_CHECK(given.size() == D, op, ": output_size must have ", d, " or ", d + 2, " elements, got ",
             IntArrayRef(*output_size));
  for (size_t i = 0; i < D; ++i) {
    const int64_t lo = sizes[i] - stride[i], hi = sizes[i] + stride[i];
    KILN_CHECK(given[i] > lo && given[i] < hi, op, ": invalid output_size ",
               IntArrayRef(*output_size), " (dim ", i, " must be between ", lo + 1, " and ", hi - 1,
               ")");
  }
  return given;
}

template std::vector<int64_t> unpool_output_size<1>(const Tensor&, const ExpandingArray<1>&,
                                                    const ExpandingArray<1>&,
                                                    const ExpandingArray<1>&,
                                                    const std::optional<std::vector<int64_t>>&);
template std::vector<int64_t> unpool_output_size<2>(const Tensor&, const ExpandingArray<2>&,
                                                    const ExpandingArray<2>&,
                                                    const ExpandingArray<2>&,
                                                    const std::optional<std::vector<int64_t>>&);
template std::vector<int64_t> unpool_output_size<3>(const Tensor&, const ExpandingArray<3>&,
                                                    const ExpandingArray<3>&,
                                                    const ExpandingArray<3>&,
                                                    const std::optional<std::vector<int64_t>>&);

Tensor max_unpool1d(const Tensor& input, const Tensor& indices, const MaxUnpool1dFuncOptions& o) {
  const std::vector<int64_t> size =
      unpool_output_size<1>(input, o.kernel_size(), o.stride(), o.padding(), o.output_size());
  // As a 2-d unpooling of planes of height 1: the flat indices are the same.
  const int64_t h = input.dim() - 1;
  return max_unpool2d(input.unsqueeze(h), indices.unsqueeze(h), {1, size[0]})
      .squeeze(IntArrayRef{h});
}

Tensor max_unpool2d(const Tensor& input, const Tensor& indices, const MaxUnpool2dFuncOptions& o) {
  return kiln::max_unpool2d(
      input, indices,
      unpool_output_size<2>(input, o.kernel_size(), o.stride(), o.padding(), o.output_size()));
}

Tensor max_unpool3d(const Tensor& input, const Tensor& indices, const MaxUnpool3dFuncOptions& o) {
  return kiln::max_unpool3d(
      input, indices,
      unpool_output_size<3>(input, o.kernel_size(), o.stride(), o.padding(), o.output_size()),
      o.stride(), o.padding());
}

}  // namespace kiln::nn::functional
