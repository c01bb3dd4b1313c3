#pragma once
// Pooling, upsampling and pixel-shuffle layers.
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kiln/core/arg.h"
#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"
#include "kiln/nn/modules/expanding_array.h"
#include "kiln/nn/options/modes.h"
#include "kiln/nn/options/pooling.h"

namespace kiln::nn {

template <size_t D>
class MaxPoolNdImpl : public Module {
 public:
  explicit MaxPoolNdImpl(const MaxPoolOptions<D>& options) : options(options) {}
  explicit MaxPoolNdImpl(ExpandingArray<D> kernel_size)  // MaxPool2d(2)
      : MaxPoolNdImpl(MaxPoolOptions<D>(kernel_size)) {}
  Tensor forward(const Tensor& input) const;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  MaxPoolOptions<D> options;
};
class MaxPool1dImpl : public MaxPoolNdImpl<1> {
  KILN_MODULE_CLONE(MaxPool1dImpl)
  using MaxPoolNdImpl::MaxPoolNdImpl;
};
class MaxPool2dImpl : public MaxPoolNdImpl<2> {
  KILN_MODULE_CLONE(MaxPool2dImpl)
  using MaxPoolNdImpl::MaxPoolNdImpl;
};
class MaxPool3dImpl : public MaxPoolNdImpl<3> {
  KILN_MODULE_CLONE(MaxPool3dImpl)
  using MaxPoolNdImpl::MaxPoolNdImpl;
};
KILN_MODULE(MaxPool1d);
KILN_MODULE(MaxPool2d);
KILN_MODULE(MaxPool3d);

template <size_t D>
class AvgPoolNdImpl : public Module {
 public:
  explicit AvgPoolNdImpl(const AvgPoolOptions<D>& options) : options(options) {}
  explicit AvgPoolNdImpl(ExpandingArray<D> kernel_size)  // AvgPool2d(2)
      : AvgPoolNdImpl(AvgPoolOptions<D>(kernel_size)) {}
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  AvgPoolOptions<D> options;
};
class AvgPool1dImpl : public AvgPoolNdImpl<1> {
  KILN_MODULE_CLONE(AvgPool1dImpl)
  using AvgPoolNdImpl::AvgPoolNdImpl;
};
class AvgPool2dImpl : public AvgPoolNdImpl<2> {
  KILN_MODULE_CLONE(AvgPool2dImpl)
  using AvgPoolNdImpl::AvgPoolNdImpl;
};
class AvgPool3dImpl : public AvgPoolNdImpl<3> {
  KILN_MODULE_CLONE(AvgPool3dImpl)
  using AvgPoolNdImpl::AvgPoolNdImpl;
};
KILN_MODULE(AvgPool1d);
KILN_MODULE(AvgPool2d);
KILN_MODULE(AvgPool3d);

// Adaptive pools take the output size; Max variants can also return the argmax indices.
template <size_t D, bool Max>
class AdaptivePoolNdImpl : public Module {
 public:
  explicit AdaptivePoolNdImpl(const AdaptivePoolOptions<D>& options) : options(options) {}
  explicit AdaptivePoolNdImpl(ExpandingArray<D> output_size)  // AdaptiveAvgPool2d(7)
      : AdaptivePoolNdImpl(AdaptivePoolOptions<D>(output_size)) {}
  Tensor forward(const Tensor& input) const;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input) const requires Max;
  void pretty_print(std::ostream& stream) const override;
  AdaptivePoolOptions<D> options;
};
class AdaptiveAvgPool1dImpl : public AdaptivePoolNdImpl<1, false> {
  KILN_MODULE_CLONE(AdaptiveAvgPool1dImpl)
  using AdaptivePoolNdImpl::AdaptivePoolNdImpl;
};
class AdaptiveAvgPool2dImpl : public AdaptivePoolNdImpl<2, false> {
  KILN_MODULE_CLONE(AdaptiveAvgPool2dImpl)
  using AdaptivePoolNdImpl::AdaptivePoolNdImpl;
};
class AdaptiveAvgPool3dImpl : public AdaptivePoolNdImpl<3, false> {
  KILN_MODULE_CLONE(AdaptiveAvgPool3dImpl)
  using AdaptivePoolNdImpl::AdaptivePoolNdImpl;
};
class AdaptiveMaxPool1dImpl : public AdaptivePoolNdImpl<1, true> {
  KILN_MODULE_CLONE(AdaptiveMaxPool1dImpl)
  using AdaptivePoolNdImpl::AdaptivePoolNdImpl;
};
class AdaptiveMaxPool2dImpl : public AdaptivePoolNdImpl<2, true> {
  KILN_MODULE_CLONE(AdaptiveMaxPool2dImpl)
  using AdaptivePoolNdImpl::AdaptivePoolNdImpl;
};
class AdaptiveMaxPool3dImpl : public AdaptivePoolNdImpl<3, true> {
  KILN_MODULE_CLONE(AdaptiveMaxPool3dImpl)
  using AdaptivePoolNdImpl::AdaptivePoolNdImpl;
};
KILN_MODULE(AdaptiveAvgPool1d);
KILN_MODULE(AdaptiveAvgPool2d);
KILN_MODULE(AdaptiveAvgPool3d);
KILN_MODULE(AdaptiveMaxPool1d);
KILN_MODULE(AdaptiveMaxPool2d);
KILN_MODULE(AdaptiveMaxPool3d);

// Max unpooling: forward(input, indices) inverts MaxPoolNd's forward_with_indices; output_size
// (D values, or N, C and D values) picks among the sizes that pool to the input's.
template <size_t D>
class MaxUnpoolNdImpl : public Module {
 public:
  explicit MaxUnpoolNdImpl(const MaxUnpoolOptions<D>& options) : options(options) {}
  explicit MaxUnpoolNdImpl(ExpandingArray<D> kernel_size)  // MaxUnpool2d(2)
      : MaxUnpoolNdImpl(MaxUnpoolOptions<D>(kernel_size)) {}
  Tensor forward(const Tensor& input, const Tensor& indices,
                 const std::optional<std::vector<int64_t>>& output_size = std::nullopt) const;
  void pretty_print(std::ostream& stream) const override;
  MaxUnpoolOptions<D> options;
};
class MaxUnpool1dImpl : public MaxUnpoolNdImpl<1> {
  KILN_MODULE_CLONE(MaxUnpool1dImpl)
  using MaxUnpoolNdImpl::MaxUnpoolNdImpl;
};
class MaxUnpool2dImpl : public MaxUnpoolNdImpl<2> {
  KILN_MODULE_CLONE(MaxUnpool2dImpl)
  using MaxUnpoolNdImpl::MaxUnpoolNdImpl;
};
class MaxUnpool3dImpl : public MaxUnpoolNdImpl<3> {
  KILN_MODULE_CLONE(MaxUnpool3dImpl)
  using MaxUnpoolNdImpl::MaxUnpoolNdImpl;
};
KILN_MODULE(MaxUnpool1d);
KILN_MODULE(MaxUnpool2d);
KILN_MODULE(MaxUnpool3d);

struct UpsampleOptions {
  KILN_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  KILN_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  KILN_ARG(std::string, mode) = "nearest";  // "nearest", "linear" or "bilinear"
  KILN_ARG(std::optional<bool>, align_corners) = std::nullopt;
};

class UpsampleImpl : public Module {
  KILN_MODULE_CLONE(UpsampleImpl)
 public:
  explicit UpsampleImpl(const UpsampleOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  UpsampleOptions options;
};
KILN_MODULE(Upsample);

class PixelShuffleImpl : public Module {
  KILN_MODULE_CLONE(PixelShuffleImpl)
 public:
  explicit PixelShuffleImpl(int64_t upscale_factor) : upscale_factor(upscale_factor) {}
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  int64_t upscale_factor;
};
KILN_MODULE(PixelShuffle);

class PixelUnshuffleImpl : public Module {
  KILN_MODULE_CLONE(PixelUnshuffleImpl)
 public:
  explicit PixelUnshuffleImpl(int64_t downscale_factor) : downscale_factor(downscale_factor) {}
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  int64_t downscale_factor;
};
KILN_MODULE(PixelUnshuffle);

}  // namespace kiln::nn
