#pragma once
// The reductions of all_reduce and reduce (torch.distributed.ReduceOp), and the element loops
// that apply them to the buffers a collective exchanges.
#include <cstddef>
#include <functional>

#include "kiln/core/dtype.h"

namespace kiln::distributed {

enum class ReduceOp { SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR };

const char* reduce_op_name(ReduceOp op);

// out[i] = a[i] op b[i] for n elements of dtype (out may be a or b). AVG sums (the caller
// divides); bitwise ops take integer and bool tensors; bool SUM/MAX are logical or, PRODUCT/MIN
// logical and. Throws a kiln::Error naming `what` for a combination that has no meaning.
using ElementReduction = std::function<void(void* out, const void* a, const void* b, size_t n)>;
ElementReduction element_reduction(ScalarType dtype, ReduceOp op, const char* what);

}  // namespace kiln::distributed
