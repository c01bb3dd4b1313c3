#include "kiln/backend/cpu/reduce_softmax.h"

#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include "kiln/backend/cpu/reduce.h"
#include "kiln/backend/cpu/reduce_float_runs.h"
#include "kiln/backend/cpu/reduce_math.h"

#define KILN_ISA_BODY "kiln/backend/cpu/reduce_softmax.inc"
#include "kiln/backend/cpu/isa_expand.h"
#undef KILN_ISA_BODY

namespace kiln::cpu {

void softmax(const Tensor& out, const Tensor& x, int64_t dim, bool log) {
  visit_floating(x.dtype(), log ? "log_softmax" : "softmax", [&](auto tag) {
    using T = decltype(tag);
    dispatch_isa<std::is_same_v<T, BFloat16>>(
        [&](auto isa) { softmax_as<T>(isa, out, x, dim, log); });
  });
}

}  // namespace kiln::cpu
