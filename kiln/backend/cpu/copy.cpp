#include "kiln/backend/cpu/copy.h"

#include <cstring>

#include "kiln/backend/cpu/copy_transpose.h"
#include "kiln/backend/cpu/loops.h"

namespace kiln::cpu {

void copy(const Tensor& dst, const Tensor& src) {
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() &&
      dst.sizes() == src.sizes()) {
    size_t n = dst.nbytes();
    if (n) std::memcpy(dst.data_ptr(), src.data_ptr(), n);
    return;
  }
  if (copy_transposed(dst, src)) return;
  visit_all(dst.dtype(), "copy", [&](auto out_tag) {
    using Out = decltype(out_tag);
    visit_all(src.dtype(), "copy", [&](auto in_tag) {
      using In = decltype(in_tag);
      unary_loop<Out, In>(dst, src, [](auto x) { return x; });
    });
  });
}

void fill(const Tensor& dst, const Scalar& value) {
  visit_all(dst.dtype(), "fill_", [&](auto tag) {
    using T = decltype(tag);
    const T v = value.to<T>();
    if (dst.is_contiguous()) {
      T* p = static_cast<T*>(dst.data_ptr());
      const int64_t n = dst.numel();
      parallel_for(0, n, kParallelGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) p[i] = v;
      });
      return;
    }
    pointwise<T>(dst, [v]() { return v; }, {});
  });
}

}  // namespace kiln::cpu
