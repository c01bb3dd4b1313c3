#pragma once
// Padding modules with libtorch's names and options: ReflectionPad1d/2d/3d, ReplicationPad1d/2d/3d,
// ZeroPad1d/2d/3d and ConstantPad1d/2d/3d. Padding lists (left, right[, top, bottom[, front,
// back]]) from the last dim, one integer for all of them; forward is kiln::pad.
#include <cstdint>
#include <optional>

#include "kiln/core/arg.h"
#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"
#include "kiln/nn/modules/expanding_array.h"

namespace kiln::nn {

template <size_t D>
struct ReflectionPadOptions {
  ReflectionPadOptions(ExpandingArray<2 * D> padding) : padding_(padding) {}  // NOLINT
  KILN_ARG(ExpandingArray<2 * D>, padding);
};
template <size_t D>
struct ReplicationPadOptions {
  ReplicationPadOptions(ExpandingArray<2 * D> padding) : padding_(padding) {}  // NOLINT
  KILN_ARG(ExpandingArray<2 * D>, padding);
};
template <size_t D>
struct ZeroPadOptions {
  ZeroPadOptions(ExpandingArray<2 * D> padding) : padding_(padding) {}  // NOLINT
  KILN_ARG(ExpandingArray<2 * D>, padding);
};
template <size_t D>
struct ConstantPadOptions {
  ConstantPadOptions(ExpandingArray<2 * D> padding, double value)
      : padding_(padding), value_(value) {}
  KILN_ARG(ExpandingArray<2 * D>, padding);
  KILN_ARG(double, value);
};

namespace detail {
// pad(input, padding, mode, value) and the module's line ("kiln::nn::ZeroPad2d(padding=[...])").
Tensor pad_forward(const Tensor& input, IntArrayRef padding, const char* mode,
                   std::optional<double> value = std::nullopt);
void print_pad(std::ostream& stream, const char* name, IntArrayRef padding,
               const double* value = nullptr);
}  // namespace detail

#define KILN_DECLARE_PAD(Name, D, OptionsTemplate, mode)                     \
  using Name##Options = OptionsTemplate<D>;                                  \
  class Name##Impl : public Module {                                         \
    KILN_MODULE_CLONE(Name##Impl)                                            \
   public:                                                                   \
    explicit Name##Impl(const Name##Options& options) : options(options) {}  \
    explicit Name##Impl(ExpandingArray<2 * D> padding) : options(padding) {} \
    Tensor forward(const Tensor& input) const {                              \
      return detail::pad_forward(input, options.padding(), mode);            \
    }                                                                        \
    void pretty_print(std::ostream& stream) const override {                 \
      detail::print_pad(stream, "kiln::nn::" #Name, options.padding());      \
    }                                                                        \
    Name##Options options;                                                   \
  };                                                                         \
  KILN_MODULE(Name)

KILN_DECLARE_PAD(ReflectionPad1d, 1, ReflectionPadOptions, "reflect");
KILN_DECLARE_PAD(ReflectionPad2d, 2, ReflectionPadOptions, "reflect");
KILN_DECLARE_PAD(ReflectionPad3d, 3, ReflectionPadOptions, "reflect");
KILN_DECLARE_PAD(ReplicationPad1d, 1, ReplicationPadOptions, "replicate");
KILN_DECLARE_PAD(ReplicationPad2d, 2, ReplicationPadOptions, "replicate");
KILN_DECLARE_PAD(ReplicationPad3d, 3, ReplicationPadOptions, "replicate");
KILN_DECLARE_PAD(ZeroPad1d, 1, ZeroPadOptions, "constant");
KILN_DECLARE_PAD(ZeroPad2d, 2, ZeroPadOptions, "constant");
KILN_DECLARE_PAD(ZeroPad3d, 3, ZeroPadOptions, "constant");
#undef KILN_DECLARE_PAD

#define KILN_DECLARE_CONSTANT_PAD(Name, D)                                               \
  using Name##Options = ConstantPadOptions<D>;                                           \
  class Name##Impl : public Module {                                                     \
    KILN_MODULE_CLONE(Name##Impl)                                                        \
   public:                                                                               \
    explicit Name##Impl(const Name##Options& options) : options(options) {}              \
    Name##Impl(ExpandingArray<2 * D> padding, double value) : options(padding, value) {} \
    Tensor forward(const Tensor& input) const {                                          \
      return detail::pad_forward(input, options.padding(), "constant", options.value()); \
    }                                                                                    \
    void pretty_print(std::ostream& stream) const override {                             \
      const double value = options.value();                                              \
      detail::print_pad(stream, "kiln::nn::" #Name, options.padding(), &value);          \
    }                                                                                    \
    Name##Options options;                                                               \
  };                                                                                     \
  KILN_MODULE(Name)

KILN_DECLARE_CONSTANT_PAD(ConstantPad1d, 1);
KILN_DECLARE_CONSTANT_PAD(ConstantPad2d, 2);
KILN_DECLARE_CONSTANT_PAD(ConstantPad3d, 3);
#undef KILN_DECLARE_CONSTANT_PAD

}  // namespace kiln::nn
