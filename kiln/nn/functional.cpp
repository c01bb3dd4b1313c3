#include "kiln/nn/functional.h"

#include "kiln/core/error.h"

namespace kiln::nn::functional {

Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& o) {
  const std::string& r = o.reduction();
  KILN_CHECK(r == "none" || r == "mean" || r == "sum" || r == "batchmean",
             "kl_div: reduction must be 'none', 'mean', 'sum' or 'batchmean', got '", r, "'");
  if (r == "batchmean") {
    Tensor sum = kiln::kl_div(input, target, Reduction::Sum, o.log_target());
    return input.dim() == 0 ? sum : sum / input.sym_size(0).guard_int();
  }
  const Reduction red = r == "none"  ? Reduction::None
                        : r == "sum" ? Reduction::Sum
                                     : Reduction::Mean;
  return kiln::kl_div(input, target, red, o.log_target());
}

}  // namespace kiln::nn::functional
