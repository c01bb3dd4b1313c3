#include "kiln/ops/nn/flex/tables.h"

#include "kiln/autograd/grad_mode.h"
#include "kiln/ops/ops.h"

namespace kiln::flex {

std::vector<Tensor> dense_tables(const std::vector<Tensor>& captured, ScalarType dtype) {
  NoGradGuard no_grad;
  std::vector<Tensor> dense;
  for (const Tensor& t : captured) dense.push_back(t.detach().to(dtype).contiguous());
  return dense;
}

}  // namespace kiln::flex
