#pragma once
// CUDA kernels for sum, mean, amax, amin, softmax and log_softmax, generated as CUDA C++ and
// compiled with NVRTC (nvrtc_program.h) on first use. The input is permuted so that the reduced
// dims (softmax's dim) come last and made contiguous, then one kernel works on [rows, len]:
// a group of 1 to 32 lanes per row for rows of up to 1024 elements, a whole block per row
// beyond. Reductions with few, long rows split each row over several blocks and finish with a
// second launch over the partial results. Calls they do not cover (other dtypes, empty inputs)
// run through the CPU fallback.
#include <string>

#include "kiln/core/dtype.h"

namespace kiln::cuda {

enum class ReduceKind { Sum, Mean, Max, Min, Softmax, LogSoftmax };

// The source of the kernel `name` for `kind` reading `in` elements and writing `out` elements.
// Sum and mean accumulate in float for 16- and 32-bit floats, double for float64 and int64 for
// integers and bool; max and min compare in those types. A reduction's partial pass writes its
// accumulator type (reduce_accumulator(in)); softmax kernels have in == out (a floating dtype).
//
//   reductions: (const In* x, Out* y, int64_t rows, int64_t len, int64_t splits, int group,
//                double divisor)
//   softmax:    (const T* x, T* y, int64_t rows, int64_t len, int group)
//
// x is [rows, len] contiguous. A reduction's output q < rows * splits folds elements
// [c * chunk, min((c + 1) * chunk, len)) of row q / splits, c = q % splits,
// chunk = ceil(len / splits); mean divides by `divisor`. group is the lanes per row (a power of
// two up to 32; the block holds blockDim.x / group rows), or 0 for one block per row.
std::string reduce_source(ReduceKind kind, ScalarType in, ScalarType out, const std::string& name);

// The dtype a reduction of `in` elements accumulates in (float32, float64 or int64).
ScalarType reduce_accumulator(ScalarType in);

// Whether a kernel exists for this kind and pair of dtypes.
bool reduce_supported(ReduceKind kind, ScalarType in, ScalarType out);

// The kernel's name for these arguments ("kiln_reduce_sum_float32_float32").
std::string reduce_kernel_name(ReduceKind kind, ScalarType in, ScalarType out);

// Sets the CUDA kernels of sum, mean, amax, amin, max and min (of all elements), softmax and
// log_softmax.
void register_reduce_kernels();

}  // namespace kiln::cuda
