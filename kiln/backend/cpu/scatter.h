#pragma once
// CPU kernels of the dim-wise index ops: gather, scatter (assign or reduce) and index checks.
// index_select/index_add/index_copy/index_fill and advanced indexing are expressed through these
// with an index expanded along the other dims (stride 0), which the row path below recognises.
//
// Note [Row path]: when the index is constant along every dim after `dim` (an index that is
// idx1d.unsqueeze(1).expand({E, F}), or a contiguous copy of one) and the rows of self and src are
// contiguous, each index value moves a whole row. Gather then copies rows in parallel; scatter
// buckets the rows by destination (a parallel, stable counting sort), and threads own disjoint
// destination rows, reducing F-wide rows with plain loops the compiler vectorises. No atomics,
// and the result does not depend on the thread count.
#include <cstdint>
#include <string>

#include "kiln/core/tensor.h"

namespace kiln::cpu {

enum class ScatterOp { Assign, Sum, Prod, Mean, Max, Min };

// Parses PyTorch's reduce names: "sum", "prod", "mean", "amax", "amin" (scatter_reduce) and
// "add", "multiply" (scatter's reduce argument).
ScatterOp scatter_op_from_name(const char* op, const std::string& reduce);

// Checks every value of `index` (int64 or int32, any strides) lies in [-size, size) when
// allow_negative, else in [0, size). The error names the op, the value and the valid range.
void check_index_range(const char* op, const Tensor& index, int64_t dim, int64_t size,
                       bool allow_negative);

// out = self.gather(dim, index): out is contiguous, has index's shape and self's dtype; index
// is int64 with values in [0, self.size(dim)).
void gather(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index);

// out.scatter_(dim, index, src) with reduction `op` (Assign: plain writes). `out` is contiguous
// and already holds self; src (when defined) has out's dtype, otherwise `value` is scattered;
// index is int64 with values in [0, out.size(dim)). include_self = false: the positions that
// receive values are first reset, so self does not take part in their reduction. Errors name
// `caller`, the op.
void scatter(const char* caller, const Tensor& out, int64_t dim, const Tensor& index,
             const Tensor& src, const Scalar& value, ScatterOp op, bool include_self);

}  // namespace kiln::cpu
