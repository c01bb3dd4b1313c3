#include "kiln/nn/modules/conv.h"

#include <cmath>
#include <ostream>

#include "kiln/nn/init.h"
#include "kiln/ops/conv.h"
#include "kiln/ops/ops.h"

namespace kiln::nn {
namespace {

// Pads the last D dims of x by (lo[d], hi[d]) with a non-zero padding mode.
Tensor pad_spatial(const Tensor& x, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi,
                   const std::string& mode) {
  const int64_t D = static_cast<int64_t>(lo.size());
  if (mode == "circular") {
    Tensor y = x;
    for (int64_t d = 0; d < D; ++d) {
      const int64_t dim = y.dim() - D + d, n = y.sym_size(dim).guard_int();
      KILN_CHECK(lo[d] <= n && hi[d] <= n, "circular padding of ", lo[d], "/", hi[d],
                 " is larger than the input size ", n, " of dim ", dim);
      y = cat({y.narrow(dim, n - lo[d], lo[d]), y, y.narrow(dim, 0, hi[d])}, dim);
    }
    return y;
  }
  std::vector<int64_t> pairs;  // last dim first, as pad() takes them
  for (int64_t d = D - 1; d >= 0; --d) pairs.push_back(lo[d]), pairs.push_back(hi[d]);
  return pad(x, pairs, mode);
}

template <size_t D>
std::vector<int64_t> same_padding_total(const ConvOptions<D>& o) {
  std::vector<int64_t> total(D);
  for (size_t d = 0; d < D; ++d) total[d] = o.dilation()[d] * (o.kernel_size()[d] - 1);
  return total;
}

template <size_t D, bool Transposed>
Tensor conv_call(const Tensor& x, const Tensor& w, const Tensor& b, const ConvOptions<D>& o,
                 IntArrayRef padding, IntArrayRef output_padding) {
  if constexpr (Transposed) {
    if constexpr (D == 1)
      return conv_transpose1d(x, w, b, o.stride(), padding, output_padding, o.groups(),
                              o.dilation());
    if constexpr (D == 2)
      return conv_transpose2d(x, w, b, o.stride(), padding, output_padding, o.groups(),
                              o.dilation());
    if constexpr (D == 3)
      return conv_transpose3d(x, w, b, o.stride(), padding, output_padding, o.groups(),
                              o.dilation());
  } else {
    if constexpr (D == 1) return conv1d(x, w, b, o.stride(), padding, o.dilation(), o.groups());
    if constexpr (D == 2) return conv2d(x, w, b, o.stride(), padding, o.dilation(), o.groups());
    if constexpr (D == 3) return conv3d(x, w, b, o.stride(), padding, o.dilation(), o.groups());
  }
}

}  // namespace

template <size_t D, bool Transposed>
ConvNdImpl<D, Transposed>::ConvNdImpl(const ConvOptions<D>& options_) : options(options_) {
  const ConvOptions<D>& o = options;
  KILN_CHECK(
      o.groups() > 0 && o.in_channels() % o.groups() == 0 && o.out_channels() % o.groups() == 0,
      name(), ": in_channels (", o.in_channels(), ") and out_channels (", o.out_channels(),
      ") must be divisible by groups (", o.groups(), ")");
  const std::string& mode = o.padding_mode();
  KILN_CHECK(mode == "zeros" || mode == "reflect" || mode == "replicate" || mode == "circular",
             name(), ": padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular', got '",
             mode, "'");
  KILN_CHECK(!Transposed || mode == "zeros", name(), ": only 'zeros' padding mode is supported");
  if (std::holds_alternative<PaddingSame>(o.padding())) {
    bool unit_stride = true;
    for (size_t d = 0; d < D; ++d) unit_stride &= o.stride()[d] == 1;
    KILN_CHECK(!Transposed && unit_stride, name(),
               ": padding='same' is not supported for strided or transposed convolutions");
  }
  std::vector<int64_t> shape =
      Transposed ? std::vector<int64_t>{o.in_channels(), o.out_channels() / o.groups()}
                 : std::vector<int64_t>{o.out_channels(), o.in_channels() / o.groups()};
  for (size_t d = 0; d < D; ++d) shape.push_back(o.kernel_size()[d]);
  weight = register_parameter("weight", kiln::empty(shape));
  if (o.bias()) bias = register_parameter("bias", kiln::empty({o.out_channels()}));
  reset_parameters();
}

template <size_t D, bool Transposed>
void ConvNdImpl<D, Transposed>::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    auto [fan_in, fan_out] = init::_calculate_fan_in_and_fan_out(weight);
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

template <size_t D, bool Transposed>
Tensor ConvNdImpl<D, Transposed>::forward(const Tensor& input,
                                          const std::vector<int64_t>& output_size) {
  run_forward_pre_hooks(input);
  if (output_size.empty())
    if (const auto* f = call_override<Tensor(const Tensor&)>()) return (*f)(input);
  const ConvOptions<D>& o = options;
  std::vector<int64_t> lo(D, 0), hi(D, 0);
  if (const auto* p = std::get_if<ExpandingArray<D>>(&o.padding())) {
    lo = hi = p->vec();
  } else if (std::holds_alternative<PaddingSame>(o.padding())) {
    const std::vector<int64_t> total = same_padding_total(o);
    for (size_t d = 0; d < D; ++d) lo[d] = total[d] / 2, hi[d] = total[d] - lo[d];
  }
  Tensor x = input;
  const bool symmetric = lo == hi;
  if (o.padding_mode() != "zeros" || !symmetric) {
    // Non-zero modes (and the uneven "same" case) pad explicitly, then convolve unpadded.
    x = o.padding_mode() == "zeros" ? pad_spatial(x, lo, hi, "constant")
                                    : pad_spatial(x, lo, hi, o.padding_mode());
    std::fill(lo.begin(), lo.end(), 0);
  }
  std::vector<int64_t> out_pad = o.output_padding().vec();
  if (Transposed && !output_size.empty()) {
    const size_t given = output_size.size();
    KILN_CHECK(given == D || given == D + 2, name(), ": output_size must have ", D, " or ", D + 2,
               " elements, got ", given);
    for (size_t d = 0; d < D; ++d) {
      const int64_t in =
          x.sym_size(x.dim() - static_cast<int64_t>(D) + static_cast<int64_t>(d)).guard_int();
      const int64_t min_size =
          (in - 1) * o.stride()[d] - 2 * lo[d] + o.dilation()[d] * (o.kernel_size()[d] - 1) + 1;
      out_pad[d] = output_size[given - D + d] - min_size;
      KILN_CHECK(out_pad[d] >= 0 && out_pad[d] < std::max(o.stride()[d], o.dilation()[d]), name(),
                 ": requested output size ", output_size[given - D + d],
                 " is not reachable (the "
                 "smallest is ",
                 min_size, ")");
    }
  }
  return conv_call<D, Transposed>(x, weight, bias, o, lo, out_pad);
}

template <size_t D, bool Transposed>
void ConvNdImpl<D, Transposed>::pretty_print(std::ostream& stream) const {
  const ConvOptions<D>& o = options;
  auto list = [&](const ExpandingArray<D>& a) {
    stream << "[";
    for (size_t d = 0; d < D; ++d) stream << (d ? ", " : "") << a[d];
    stream << "]";
  };
  stream << name() << "(" << o.in_channels() << ", " << o.out_channels() << ", kernel_size=";
  list(o.kernel_size());
  stream << ", stride=";
  list(o.stride());
  if (const auto* p = std::get_if<ExpandingArray<D>>(&o.padding())) {
    stream << ", padding=";
    list(*p);
  } else {
    stream << ", padding=" << (std::holds_alternative<PaddingSame>(o.padding()) ? "same" : "valid");
  }
  if (o.groups() != 1) stream << ", groups=" << o.groups();
  if (!o.bias()) stream << ", bias=false";
  if (o.padding_mode() != "zeros") stream << ", padding_mode=" << o.padding_mode();
  stream << ")";
}

template class ConvNdImpl<1, false>;
template class ConvNdImpl<2, false>;
template class ConvNdImpl<3, false>;
template class ConvNdImpl<1, true>;
template class ConvNdImpl<2, true>;
template class ConvNdImpl<3, true>;

}  // namespace kiln::nn
