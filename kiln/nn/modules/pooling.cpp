#include "kiln/nn/modules/pooling.h"

#include <ostream>

#include "kiln/nn/functional/unpool.h"
#include "kiln/ops/conv.h"
#include "kiln/ops/ops.h"

namespace kiln::nn {
namespace {

template <size_t D>
void print_list(std::ostream& stream, const char* label, const ExpandingArray<D>& a) {
  stream << label << "=[";
  for (size_t d = 0; d < D; ++d) stream << (d ? ", " : "") << a[d];
  stream << "]";
}

}  // namespace

template <size_t D>
Tensor MaxPoolNdImpl<D>::forward(const Tensor& input) const {
  return std::get<0>(forward_with_indices(input));
}

template <size_t D>
std::tuple<Tensor, Tensor> MaxPoolNdImpl<D>::forward_with_indices(const Tensor& input) const {
  const auto& o = options;
  if constexpr (D == 1) {
    return max_pool1d_with_indices(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(),
                                   o.ceil_mode());
  } else if constexpr (D == 2) {
    return max_pool2d_with_indices(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(),
                                   o.ceil_mode());
  } else {
    return max_pool3d_with_indices(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(),
                                   o.ceil_mode());
  }
}

template <size_t D>
void MaxPoolNdImpl<D>::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::MaxPool" << D << "d(";
  print_list(stream, "kernel_size", options.kernel_size());
  print_list(stream, ", stride", options.stride());
  print_list(stream, ", padding", options.padding());
  print_list(stream, ", dilation", options.dilation());
  stream << ", ceil_mode=" << (options.ceil_mode() ? "true" : "false") << ")";
}

template <size_t D>
Tensor AvgPoolNdImpl<D>::forward(const Tensor& input) const {
  const auto& o = options;
  if constexpr (D == 1) {
    return avg_pool1d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(),
                      o.count_include_pad());
  } else if constexpr (D == 2) {
    return avg_pool2d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(),
                      o.count_include_pad(), o.divisor_override());
  } else {
    return avg_pool3d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(),
                      o.count_include_pad(), o.divisor_override());
  }
}

template <size_t D>
void AvgPoolNdImpl<D>::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::AvgPool" << D << "d(";
  print_list(stream, "kernel_size", options.kernel_size());
  print_list(stream, ", stride", options.stride());
  print_list(stream, ", padding", options.padding());
  stream << ")";
}

template <size_t D, bool Max>
Tensor AdaptivePoolNdImpl<D, Max>::forward(const Tensor& input) const {
  if constexpr (Max) {
    return std::get<0>(forward_with_indices(input));
  } else if constexpr (D == 1) {
    return adaptive_avg_pool1d(input, options.output_size());
  } else if constexpr (D == 2) {
    return adaptive_avg_pool2d(input, options.output_size());
  } else {
    return adaptive_avg_pool3d(input, options.output_size());
  }
}

template <size_t D, bool Max>
std::tuple<Tensor, Tensor> AdaptivePoolNdImpl<D, Max>::forward_with_indices(
    const Tensor& input) const requires Max {
  if constexpr (D == 1) return adaptive_max_pool1d(input, options.output_size());
  if constexpr (D == 2) return adaptive_max_pool2d(input, options.output_size());
  return adaptive_max_pool3d(input, options.output_size());
}

template <size_t D, bool Max>
void AdaptivePoolNdImpl<D, Max>::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Adaptive" << (Max ? "Max" : "Avg") << "Pool" << D << "d(";
  print_list(stream, "output_size", options.output_size());
  stream << ")";
}

template class MaxPoolNdImpl<1>;
template class MaxPoolNdImpl<2>;
template class MaxPoolNdImpl<3>;
template class AvgPoolNdImpl<1>;
template class AvgPoolNdImpl<2>;
template class AvgPoolNdImpl<3>;
template class AdaptivePoolNdImpl<1, false>;
template class AdaptivePoolNdImpl<2, false>;
template class AdaptivePoolNdImpl<3, false>;
template class AdaptivePoolNdImpl<1, true>;
template class AdaptivePoolNdImpl<2, true>;
template class AdaptivePoolNdImpl<3, true>;

template <size_t D>
Tensor MaxUnpoolNdImpl<D>::forward(const Tensor& input, const Tensor& indices,
                                   const std::optional<std::vector<int64_t>>& output_size) const {
  functional::MaxUnpoolFuncOptions<D> o(options.kernel_size());
  o.stride(options.stride()).padding(options.padding()).output_size(output_size);
  if constexpr (D == 1) {
    return functional::max_unpool1d(input, indices, o);
  } else if constexpr (D == 2) {
    return functional::max_unpool2d(input, indices, o);
  } else {
    return functional::max_unpool3d(input, indices, o);
  }
}

template <size_t D>
void MaxUnpoolNdImpl<D>::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::MaxUnpool" << D << "d(";
  print_list(stream, "kernel_size", options.kernel_size());
  print_list(stream, ", stride", options.stride());
  print_list(stream, ", padding", options.padding());
  stream << ")";
}

template class MaxUnpoolNdImpl<1>;
template class MaxUnpoolNdImpl<2>;
template class MaxUnpoolNdImpl<3>;

Tensor UpsampleImpl::forward(const Tensor& input) const {
  return interpolate(input, options.size(), options.scale_factor(), options.mode(),
                     options.align_corners());
}

void UpsampleImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Upsample(mode=" << options.mode() << ")";
}

Tensor PixelShuffleImpl::forward(const Tensor& input) const {
  return pixel_shuffle(input, upscale_factor);
}

void PixelShuffleImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::PixelShuffle(upscale_factor=" << upscale_factor << ")";
}

Tensor PixelUnshuffleImpl::forward(const Tensor& input) const {
  return pixel_unshuffle(input, downscale_factor);
}

void PixelUnshuffleImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::PixelUnshuffle(downscale_factor=" << downscale_factor << ")";
}

}  // namespace kiln::nn
