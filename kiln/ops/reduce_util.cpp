#include "kiln/ops/reduce_util.h"

#include <algorithm>

#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"

namespace kiln::reduce {

std::vector<int64_t> reduced_dims(const char* op, const std::vector<int64_t>& dims, int64_t ndim) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
  } else {
    out = meta::wrap_dims(op, dims, ndim);
    if (ndim == 0) out.clear();
  }
  std::sort(out.begin(), out.end());
  return out;
}

SymShape reduced_shape(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  SymShape out;
  for (int64_t d = 0; d < x.dim(); ++d) {
    bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!reduced) out.push_back(x.size(d));
    else if (keepdim) out.push_back(1);
  }
  return out;
}

Tensor as_rows(const Tensor& x, const std::vector<int64_t>& dims) {
  std::vector<int64_t> perm;
  int64_t outer = 1, R = 1;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) {
      perm.push_back(d);
      outer *= x.size(d).guard_int();
    }
  }
  for (int64_t d : dims) {
    perm.push_back(d);
    R *= x.size(d).guard_int();
  }
  NoGradGuard no_grad;
  Tensor p = x.dim() == 0 ? x : x.permute(perm);
  return p.contiguous().view({outer, R});
}

}  // namespace kiln::reduce
