#pragma once
// CUDA kernels for the reductions that fold each output's elements with one associative
// operation (sum, mean, prod, amax, amin, max, min, all, any, count_nonzero, norm) and for those
// that take two passes over each row (softmax, log_softmax, logsumexp, var, std, var_mean,
// std_mean), generated as CUDA C++ and compiled with NVRTC (nvrtc_program.h) on first use. The
// input is permuted so that the reduced dims (softmax's dim) come last and made contiguous, then
// one kernel works on [rows, len]: a group of 1 to 32 lanes per row for rows of up to 1024
// elements, a whole block per row beyond. Folds with few, long rows split each row over several
// blocks and finish with a second launch over the partial results. Calls they do not cover
// (other dtypes, empty inputs) run through the CPU fallback.
//
// reduce_more.h builds the index-tracking reductions and the scans on the device helpers and the
// row layout below.
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "kiln/core/dtype.h"
#include "kiln/ops/registry.h"

namespace kiln::cuda {

enum class ReduceKind {
  // Folds: element -> accumulator (map), fold, accumulator -> output (finish).
  Sum,
  Mean,
  Prod,
  Max,
  Min,
  All,
  Any,
  CountNonzero,
  NormZero,    // count of nonzero elements
  NormOne,     // sum of |x|
  NormTwo,     // sqrt of the sum of x^2
  NormInf,     // max |x|
  NormNegInf,  // min |x|
  NormP,       // (sum of |x|^p)^(1/p), p the kernel's `scalar`
  // Two passes over each row.
  Softmax,
  LogSoftmax,
  LogSumExp,
  Var,  // divisor max(0, len - correction), correction the kernel's `scalar`
  Std,
};

// A fold's launches: the whole fold, or for split rows a partial pass (map and fold into the
// accumulator's dtype) and a final pass over the partial results (fold and finish).
enum class ReducePass { Whole, Partial, Final };

bool is_row_kind(ReduceKind kind);  // the two-pass kinds

// The source of the kernel `name` for `kind` reading `in` elements and writing `out` elements.
// A partial pass writes reduce_accumulator(kind, in); a final pass reads it (in is the
// accumulator's dtype). Row kinds have only the whole pass.
//
//   folds: (const In* x, Out* y, int64_t rows, int64_t len, int64_t splits, int group,
//           double scalar)
//   rows:  (const In* x, Out* y, Out* mean, int64_t rows, int64_t len, int group, double scalar)
//
// x is [rows, len] contiguous. A fold's output q < rows * splits folds elements
// [c * chunk, min((c + 1) * chunk, len)) of row q / splits, c = q % splits,
// chunk = ceil(len / splits); mean divides by `scalar`. Softmax writes [rows, len], the other row
// kinds one value per row and var's and std's kernels also the mean when `mean` is not null.
// group is the lanes per row (a power of two up to 32; the block holds blockDim.x / group rows),
// or 0 for one block per row.
std::string reduce_source(ReduceKind kind, ReducePass pass, ScalarType in, ScalarType out,
                          const std::string& name);

// The dtype `kind` accumulates `in` elements in: float32 for 16- and 32-bit floats, float64 for
// float64 and int64 for integers and bool, except that prod and var accumulate floats in
// float64, all and any in bool and count_nonzero in int64.
ScalarType reduce_accumulator(ReduceKind kind, ScalarType in);

// Whether the whole pass exists for this kind and pair of dtypes (a fold's partial and final
// passes exist with it).
bool reduce_supported(ReduceKind kind, ScalarType in, ScalarType out);

// The kernel's name for these arguments ("kiln_reduce_sum_float32_float32",
// "kiln_reduce_sum_float16_float32_partial").
std::string reduce_kernel_name(ReduceKind kind, ReducePass pass, ScalarType in, ScalarType out);

// Sets the CUDA kernels of sum, mean, prod, amax, amin, max and min (of all elements), all, any,
// count_nonzero, norm, softmax, log_softmax, logsumexp, var, std, var_mean and std_mean.
void register_reduce_kernels();

// ---- Shared with reduce_more.cpp ----

// Device code the kernels share; `In` (the element type) and `Acc` must be declared before it.
//   group_all(v, group, f), block_all(v, shared, f): v folded with f over a group of lanes or
//     the block (every lane gets the result; f::identity() pads); values of any type that has
//     shfl_xor(v, offset) (arithmetic types do; declare it for structs);
//   fold(p, begin, end, step, a, f, map): a folded with map(p[i], i) over the strided range;
//   Sum, Max, Min (NaN wins) over Acc; load(v) (In to Acc), ex, lg.
extern const char* const kReduceDeviceSource;

// self (converted to dt) permuted so that the dims marked in `last` come last, in order, and made
// contiguous: [rows, len] with len the product of the marked dims' sizes.
struct RowLayout {
  Tensor x;
  std::vector<int64_t> perm;  // x's dims as self's
  int64_t rows, len;
};
RowLayout rows_last(const Tensor& self, const std::vector<bool>& last, ScalarType dt);

// The dims of an nd-dim tensor named in `dims` (wrapped); every dim when `dims` is empty.
std::vector<bool> dims_mask(int64_t nd, const std::vector<int64_t>& dims);

// Lanes per row of `len` elements: 1 to 32 up to 1024 elements, else 0 (a block per row).
int row_group(int64_t len);
// The threads of a block for `group` (row_group's result).
unsigned row_block_threads(int group);

// Launches fn over `rows` rows of `group` lanes each (0: a block per row), enough blocks to fill
// the device; the kernel strides over the rest.
void launch_rows(const OpDef& op, cudaKernel_t fn, int64_t rows, int group, int dev, void** params);

// y = src on the device (the pointwise copy kernel).
void copy_into(const Tensor& y, const Tensor& src);

// y when it is contiguous, else a new contiguous tensor like it (to copy_into y afterwards).
Tensor contiguous_target(const Tensor& y);

}  // namespace kiln::cuda
