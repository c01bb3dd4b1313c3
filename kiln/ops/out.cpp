#include "kiln/ops/out.h"

#include "kiln/core/grad_mode.h"
#include "kiln/ops/creation.h"

namespace kiln::detail {

namespace {
// PyTorch's canCast: no floating result into an integral out, no non-bool result into bool.
bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating_point(from) && !is_floating_point(to)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}
}  // namespace

Tensor& write_out(const char* op, Tensor& out, const Tensor& result) {
  KILN_CHECK(out.defined(), op, ": out is an undefined tensor");
  KILN_CHECK(!(GradMode::is_enabled() && (result.requires_grad() || out.requires_grad())), op,
             ": functions with out=... arguments don't support automatic differentiation, but "
             "one of the arguments requires grad.");
  KILN_CHECK(can_cast(result.dtype(), out.dtype()), op, ": result type ", result.dtype(),
             " can't be cast to the desired output type ", out.dtype());
  KILN_CHECK(out.device() == result.device(), op, ": out is on ", out.device(),
             " but the result is on ", result.device());
  if (out.sizes() != result.sizes()) out.set_data(empty(result.sizes(), out.options()));
  out.copy_(result);
  return out;
}

}  // namespace kiln::detail
