// torch.equal: whole-tensor equality as one bool.
#include "kiln/ops/ops.h"

namespace kiln {

bool equal(const Tensor& self, const Tensor& other) {
  return self.sym_sizes() == other.sym_sizes() && self.eq(other).all().item<bool>();
}

bool Tensor::equal(const Tensor& other) const { return kiln::equal(*this, other); }

}  // namespace kiln
