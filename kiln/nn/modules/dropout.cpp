#include "kiln/nn/modules/dropout.h"

#include <ostream>

#include "kiln/ops/ops.h"

namespace kiln::nn {
namespace {

using DropoutFn = Tensor (*)(const Tensor&, double, bool, Generator*);

Tensor run_dropout(DropoutFn fn, const DropoutOptions& o, const Tensor& input, bool training) {
  KILN_CHECK(o.p() >= 0 && o.p() <= 1, "dropout probability has to be between 0 and 1, but got ",
             o.p());
  Tensor out = fn(input, o.p(), training, nullptr);
  if (!o.inplace()) return out;
  Tensor target = input;
  return target.copy_(out);
}

void print_dropout(std::ostream& stream, const char* name, const DropoutOptions& o) {
  stream << "kiln::nn::" << name << "(p=" << o.p()
         << ", inplace=" << (o.inplace() ? "true" : "false") << ")";
}

}  // namespace

#define KILN_DEFINE_DROPOUT(Name, fn)                                                           \
  Name##Impl::Name##Impl(const DropoutOptions& options_) : options(options_) {                  \
    KILN_CHECK(options.p() >= 0 && options.p() <= 1,                                            \
               #Name ": dropout probability has to be between 0 and 1, but got ", options.p()); \
  }                                                                                             \
  Tensor Name##Impl::forward(const Tensor& input) {                                             \
    return run_dropout(fn, options, input, is_training());                                      \
  }                                                                                             \
  void Name##Impl::pretty_print(std::ostream& stream) const {                                   \
    print_dropout(stream, #Name, options);                                                      \
  }
KILN_DEFINE_DROPOUT(Dropout, &dropout)
KILN_DEFINE_DROPOUT(Dropout1d, &feature_dropout)
KILN_DEFINE_DROPOUT(Dropout2d, &feature_dropout)
KILN_DEFINE_DROPOUT(Dropout3d, &feature_dropout)
KILN_DEFINE_DROPOUT(AlphaDropout, &alpha_dropout)
KILN_DEFINE_DROPOUT(FeatureAlphaDropout, &feature_alpha_dropout)
#undef KILN_DEFINE_DROPOUT

}  // namespace kiln::nn
