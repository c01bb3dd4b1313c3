#pragma once
// Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d, with libtorch's options
// (stride, padding incl. kSame/kValid, dilation, groups, bias, padding_mode).
#include <string>
#include <variant>

#include "kiln/core/arg.h"
#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"
#include "kiln/nn/modules/expanding_array.h"
#include "kiln/nn/options/modes.h"

namespace kiln {
struct PaddingSame {};
struct PaddingValid {};
inline constexpr PaddingSame kSame{};
inline constexpr PaddingValid kValid{};
}  // namespace kiln

namespace kiln::nn {

template <size_t D>
using ConvPadding = std::variant<ExpandingArray<D>, PaddingValid, PaddingSame>;

template <size_t D>
struct ConvOptions {
  ConvOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  KILN_ARG(int64_t, in_channels);
  KILN_ARG(int64_t, out_channels);
  KILN_ARG(ExpandingArray<D>, kernel_size);
  KILN_ARG(ExpandingArray<D>, stride) = 1;
  KILN_ARG(ExpandingArray<D>, dilation) = 1;
  KILN_ARG(ExpandingArray<D>, output_padding) = 0;  // transposed convolutions only
  KILN_ARG(int64_t, groups) = 1;
  KILN_ARG(bool, bias) = true;
  KILN_ARG(std::string, padding_mode) = "zeros";  // "zeros", "reflect", "replicate", "circular"

 public:
  ConvOptions& padding(ExpandingArray<D> p) {
    padding_ = p;
    return *this;
  }
  ConvOptions& padding(std::initializer_list<int64_t> p) { return padding(ExpandingArray<D>(p)); }
  ConvOptions& padding(PaddingSame) {
    padding_ = PaddingSame{};
    return *this;
  }
  ConvOptions& padding(PaddingValid) {
    padding_ = PaddingValid{};
    return *this;
  }
  const ConvPadding<D>& padding() const { return padding_; }

 private:
  ConvPadding<D> padding_ = ExpandingArray<D>(0);
};

using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;
using Conv3dOptions = ConvOptions<3>;
using ConvTranspose1dOptions = ConvOptions<1>;
using ConvTranspose2dOptions = ConvOptions<2>;
using ConvTranspose3dOptions = ConvOptions<3>;

// Weight [out, in / groups, k...] (transposed: [in, out / groups, k...]) and bias [out], both
// initialised as PyTorch does (kaiming_uniform_ with a = sqrt(5); bias U(+-1/sqrt(fan_in))).
template <size_t D, bool Transposed>
class ConvNdImpl : public Module {
 public:
  explicit ConvNdImpl(const ConvOptions<D>& options);
  ConvNdImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : ConvNdImpl(ConvOptions<D>(in_channels, out_channels, kernel_size)) {}
  void reset_parameters();
  // output_size (transposed only) picks the output_padding that produces it.
  Tensor forward(const Tensor& input, const std::vector<int64_t>& output_size = {});
  void pretty_print(std::ostream& stream) const override;

  ConvOptions<D> options;
  Tensor weight, bias;
};

class Conv1dImpl : public ConvNdImpl<1, false> {
  KILN_MODULE_CLONE(Conv1dImpl)
  using ConvNdImpl::ConvNdImpl;
};
class Conv2dImpl : public ConvNdImpl<2, false> {
  KILN_MODULE_CLONE(Conv2dImpl)
  using ConvNdImpl::ConvNdImpl;
};
class Conv3dImpl : public ConvNdImpl<3, false> {
  KILN_MODULE_CLONE(Conv3dImpl)
  using ConvNdImpl::ConvNdImpl;
};
class ConvTranspose1dImpl : public ConvNdImpl<1, true> {
  KILN_MODULE_CLONE(ConvTranspose1dImpl)
  using ConvNdImpl::ConvNdImpl;
};
class ConvTranspose2dImpl : public ConvNdImpl<2, true> {
  KILN_MODULE_CLONE(ConvTranspose2dImpl)
  using ConvNdImpl::ConvNdImpl;
};
class ConvTranspose3dImpl : public ConvNdImpl<3, true> {
  KILN_MODULE_CLONE(ConvTranspose3dImpl)
  using ConvNdImpl::ConvNdImpl;
};
KILN_MODULE(Conv1d);
KILN_MODULE(Conv2d);
KILN_MODULE(Conv3d);
KILN_MODULE(ConvTranspose1d);
KILN_MODULE(ConvTranspose2d);
KILN_MODULE(ConvTranspose3d);

extern template class ConvNdImpl<1, false>;
extern template class ConvNdImpl<2, false>;
extern template class ConvNdImpl<3, false>;
extern template class ConvNdImpl<1, true>;
extern template class ConvNdImpl<2, true>;
extern template class ConvNdImpl<3, true>;

}  // namespace kiln::nn
