#pragma once
// Options of the pooling modules (kiln/nn/modules/pooling.h), which are also the options of
// their functional forms, as in libtorch:
//   nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2))
//   F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2))
#include <optional>
#include <vector>

#include "kiln/core/arg.h"
#include "kiln/nn/modules/expanding_array.h"

namespace kiln::nn {

template <size_t D>
struct MaxPoolOptions {
  MaxPoolOptions(ExpandingArray<D> kernel_size)  // NOLINT: MaxPool2dOptions(2)
      : kernel_size_(kernel_size), stride_(kernel_size) {}
  KILN_ARG(ExpandingArray<D>, kernel_size);
  KILN_ARG(ExpandingArray<D>, stride);  // defaults to kernel_size
  KILN_ARG(ExpandingArray<D>, padding) = 0;
  KILN_ARG(ExpandingArray<D>, dilation) = 1;
  KILN_ARG(bool, ceil_mode) = false;
};
using MaxPool1dOptions = MaxPoolOptions<1>;
using MaxPool2dOptions = MaxPoolOptions<2>;
using MaxPool3dOptions = MaxPoolOptions<3>;

template <size_t D>
struct AvgPoolOptions {
  AvgPoolOptions(ExpandingArray<D> kernel_size)  // NOLINT
      : kernel_size_(kernel_size), stride_(kernel_size) {}
  KILN_ARG(ExpandingArray<D>, kernel_size);
  KILN_ARG(ExpandingArray<D>, stride);  // defaults to kernel_size
  KILN_ARG(ExpandingArray<D>, padding) = 0;
  KILN_ARG(bool, ceil_mode) = false;
  KILN_ARG(bool, count_include_pad) = true;
  KILN_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};
using AvgPool1dOptions = AvgPoolOptions<1>;
using AvgPool2dOptions = AvgPoolOptions<2>;
using AvgPool3dOptions = AvgPoolOptions<3>;

template <size_t D>
struct AdaptivePoolOptions {
  AdaptivePoolOptions(ExpandingArray<D> output_size)  // NOLINT: AdaptiveAvgPool2dOptions(7)
      : output_size_(output_size) {}
  KILN_ARG(ExpandingArray<D>, output_size);
};
using AdaptiveAvgPool1dOptions = AdaptivePoolOptions<1>;
using AdaptiveAvgPool2dOptions = AdaptivePoolOptions<2>;
using AdaptiveAvgPool3dOptions = AdaptivePoolOptions<3>;
using AdaptiveMaxPool1dOptions = AdaptivePoolOptions<1>;
using AdaptiveMaxPool2dOptions = AdaptivePoolOptions<2>;
using AdaptiveMaxPool3dOptions = AdaptivePoolOptions<3>;

// Max unpooling: the inverse of MaxPoolNd given its indices.
//   nn::MaxUnpool2d(nn::MaxUnpool2dOptions(2).stride(2))
template <size_t D>
struct MaxUnpoolOptions {
  MaxUnpoolOptions(ExpandingArray<D> kernel_size)  // NOLINT: MaxUnpool2dOptions(2)
      : kernel_size_(kernel_size), stride_(kernel_size) {}
  KILN_ARG(ExpandingArray<D>, kernel_size);
  KILN_ARG(ExpandingArray<D>, stride);  // defaults to kernel_size
  KILN_ARG(ExpandingArray<D>, padding) = 0;
};
using MaxUnpool1dOptions = MaxUnpoolOptions<1>;
using MaxUnpool2dOptions = MaxUnpoolOptions<2>;
using MaxUnpool3dOptions = MaxUnpoolOptions<3>;

namespace functional {
using MaxPool1dFuncOptions = MaxPool1dOptions;
using MaxPool2dFuncOptions = MaxPool2dOptions;
using MaxPool3dFuncOptions = MaxPool3dOptions;
using AvgPool1dFuncOptions = AvgPool1dOptions;
using AvgPool2dFuncOptions = AvgPool2dOptions;
using AvgPool3dFuncOptions = AvgPool3dOptions;
using AdaptiveAvgPool1dFuncOptions = AdaptiveAvgPool1dOptions;
using AdaptiveAvgPool2dFuncOptions = AdaptiveAvgPool2dOptions;
using AdaptiveAvgPool3dFuncOptions = AdaptiveAvgPool3dOptions;
using AdaptiveMaxPool1dFuncOptions = AdaptiveMaxPool1dOptions;
using AdaptiveMaxPool2dFuncOptions = AdaptiveMaxPool2dOptions;
using AdaptiveMaxPool3dFuncOptions = AdaptiveMaxPool3dOptions;

// F::max_unpool2d's options also carry the output size: D values, or N, C and D values.
template <size_t D>
struct MaxUnpoolFuncOptions {
  MaxUnpoolFuncOptions(ExpandingArray<D> kernel_size)  // NOLINT
      : kernel_size_(kernel_size), stride_(kernel_size) {}
  KILN_ARG(ExpandingArray<D>, kernel_size);
  KILN_ARG(ExpandingArray<D>, stride);  // defaults to kernel_size
  KILN_ARG(ExpandingArray<D>, padding) = 0;
  KILN_ARG(std::optional<std::vector<int64_t>>, output_size) = std::nullopt;
};
using MaxUnpool1dFuncOptions = MaxUnpoolFuncOptions<1>;
using MaxUnpool2dFuncOptions = MaxUnpoolFuncOptions<2>;
using MaxUnpool3dFuncOptions = MaxUnpoolFuncOptions<3>;
}  // namespace functional

}  // namespace kiln::nn
