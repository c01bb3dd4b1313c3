#pragma once
// Shared pieces of reduction entries: the output shape of reducing `dims` and the CPU driver.
#include <vector>

#include "kiln/backend/cpu/loops.h"
#include "kiln/ops/registry.h"

namespace kiln::reduce {

// Dims to reduce (empty list = all dims), wrapped and sorted.
std::vector<int64_t> reduced_dims(const char* op, const std::vector<int64_t>& dims, int64_t ndim);
SymShape reduced_shape(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim);

// `x` viewed as [outer, R] where each row holds the R elements reduced into one output
// element (a copy only when the reduced dims are not already innermost and dense).
Tensor as_rows(const Tensor& x, const std::vector<int64_t>& dims);

// out[o] = finalize(fold(init, row o)) for every row of x (rows from as_rows), in parallel.
template <class Out, class In, class Acc, class Fold, class Finalize>
void rows(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims, Acc init,
          Fold fold, Finalize finalize) {
  Tensor r = as_rows(x, dims);
  const int64_t outer = r.size(0).guard_int(), R = r.size(1).guard_int();
  const In* src = static_cast<const In*>(r.data_ptr());
  Out* dst = static_cast<Out*>(out.data_ptr());
  cpu::parallel_for(0, outer, std::max<int64_t>(1, cpu::kParallelGrain / std::max<int64_t>(R, 1)),
                    [&](int64_t b, int64_t e) {
                      for (int64_t o = b; o < e; ++o) {
                        Acc acc = init;
                        const In* row = src + o * R;
                        for (int64_t i = 0; i < R; ++i)
                          acc = fold(acc, static_cast<cpu::compute_t<In>>(row[i]));
                        dst[o] = static_cast<Out>(finalize(acc, R));
                      }
                    });
}

}  // namespace kiln::reduce
