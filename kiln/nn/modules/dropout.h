#pragma once
// Dropout layers: active in training mode, the identity in eval mode.
#include "kiln/core/arg.h"
#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"

namespace kiln::nn {

struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}  // NOLINT: Dropout(0.1)
  KILN_ARG(double, p);
  KILN_ARG(bool, inplace) = false;
};

using Dropout1dOptions = DropoutOptions;
using Dropout2dOptions = DropoutOptions;
using Dropout3dOptions = DropoutOptions;
using AlphaDropoutOptions = DropoutOptions;
using FeatureAlphaDropoutOptions = DropoutOptions;

// Declares a dropout module `Name` whose forward calls `fn(input, p, is_training())`.
#define KILN_DECLARE_DROPOUT(Name)                           \
  class Name##Impl : public Module {                         \
    KILN_MODULE_CLONE(Name##Impl)                            \
   public:                                                   \
    explicit Name##Impl(const DropoutOptions& options = {}); \
    Tensor forward(const Tensor& input);                     \
    void pretty_print(std::ostream& stream) const override;  \
    DropoutOptions options;                                  \
  };                                                         \
  KILN_MODULE(Name)

KILN_DECLARE_DROPOUT(Dropout);
KILN_DECLARE_DROPOUT(Dropout1d);
KILN_DECLARE_DROPOUT(Dropout2d);
KILN_DECLARE_DROPOUT(Dropout3d);
KILN_DECLARE_DROPOUT(AlphaDropout);
KILN_DECLARE_DROPOUT(FeatureAlphaDropout);
#undef KILN_DECLARE_DROPOUT

}  // namespace kiln::nn
