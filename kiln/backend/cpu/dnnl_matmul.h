#pragma once
// oneDNN's matmul primitive: the path for the 16-bit float dtypes OpenBLAS does not have.
#include "kiln/backend/cpu/blas.h"

namespace kiln::cpu::onednn {

// Whether oneDNN has an optimised (not the reference) matmul for `dtype` on this CPU (for int8:
// into int32, _int_mm's product). Probed
// once per dtype; false for dtypes oneDNN does not know.
bool has_matmul(ScalarType dtype);

// Runs `args` through oneDNN's matmul primitive (float32, bfloat16 or float16; int8 into int32).
// Returns false, having computed nothing, when oneDNN has no optimised implementation for this
// dtype and layout.
bool matmul(const GemmArgs& args);

}  // namespace kiln::cpu::onednn
