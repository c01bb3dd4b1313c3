#pragma once
// Shared pieces of the reduction entries: dims and output shapes, gradients broadcast back over
// the reduced dims, op-table samples and float64 references.
#include <functional>
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln::reduce {

// Dims to reduce (empty list = all dims), wrapped, sorted and checked for repeats.
std::vector<int64_t> reduced_dims(const char* op, const std::vector<int64_t>& dims, int64_t ndim);
SymShape reduced_shape(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim);
// Number of elements folded into each output.
int64_t reduced_count(const Tensor& x, const std::vector<int64_t>& dims);
// PyTorch's check for reductions without an identity (amax, argmax, ...) on empty inputs.
void check_nonempty(const char* op, const Tensor& x, const std::vector<int64_t>& dims,
                    bool dims_given);

// A reduction's output (or its gradient) with the reduced dims restored as size 1 ...
Tensor with_kept_dims(const Tensor& t, const Tensor& x, const std::vector<int64_t>& dims,
                      bool keepdim);
// ... and broadcast back to x's shape.
Tensor expand_back(const Tensor& t, const Tensor& x, const std::vector<int64_t>& dims,
                   bool keepdim);

// Attributes of a sample from its dims (nullopt: the op's form without dims) and keepdim.
using SampleAttrs = std::function<Attrs(const std::vector<int64_t>& dims, bool keepdim)>;
struct SampleOptions {
  double low = -3, high = 3;
  bool multi_dim = true;     // the op takes a list of dims (else one dim per sample)
  bool full = true;          // the op has a form without dims (samples with dims {})
  bool empty_reduce = true;  // reducing over a zero-size dim is defined (no error)
};
// Representative reductions: all dims, one dim, keepdim, several dims, a dim that is not
// innermost, non-contiguous, transposed and permuted inputs, 0-dim, zero-size.
std::vector<OpSample> samples(ScalarType dtype, const SampleOptions& opt, const SampleAttrs& attrs);
// Error samples of the dim checks on a [3, 4] input: a dim out of range, a repeated dim (multi_dim)
// and, unless empty_reduce, a zero-size input without dims (full) or with a zero-size dim.
std::vector<OpErrorSample> error_samples(const SampleOptions& opt, const SampleAttrs& attrs);

// Float64 reference of a reduction: `f` gets the values of each output's slice of x, in
// logical order; the result has the reduced shape.
Tensor reference(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
                 const std::function<double(const std::vector<double>&)>& f);
// Float64 reference of an op along one dim (scans, softmax): `f` maps each slice to its outputs.
Tensor reference_along(const Tensor& x, int64_t dim,
                       const std::function<std::vector<double>(const std::vector<double>&)>& f);

// Dtype lists of the op-table tests.
extern const std::vector<ScalarType> kFloatDtypes;    // float64, float32, bfloat16
extern const std::vector<ScalarType> kNumericDtypes;  // floats, int64, int32
extern const std::vector<ScalarType> kAllDtypes;      // numeric and bool

}  // namespace kiln::reduce
