#include "kiln/core/tensor.h"

namespace kiln::detail {

void check_accessor(const Tensor& t, ScalarType type, size_t dims, const char* what) {
  KILN_CHECK(t.defined(), what, "<", type, ", ", dims, ">: the tensor is undefined");
  KILN_CHECK(t.dtype() == type, what, "<", type, ", ", dims, ">: expected a tensor of dtype ", type,
             ", got a tensor of dtype ", t.dtype());
  KILN_CHECK(t.dim() == static_cast<int64_t>(dims), what, "<", type, ", ", dims, ">: expected a ",
             dims, "-dim tensor, got a ", t.dim(), "-dim tensor of shape ", t.sizes());
  KILN_CHECK(!t.is_meta(), what, "<", type, ", ", dims, ">: a meta tensor has no elements");
  if (std::string(what) == "packed_accessor32") {
    constexpr int64_t kMax = INT32_MAX;
    for (int64_t d = 0; d < t.dim(); ++d)
      KILN_CHECK(t.size(d) <= kMax && t.stride(d) <= kMax && t.stride(d) >= -kMax, what, "<", type,
                 ", ", dims, ">: size ", t.size(d), " or stride ", t.stride(d), " of dim ", d,
                 " does not fit in int32; use packed_accessor64");
  }
}

}  // namespace kiln::detail
