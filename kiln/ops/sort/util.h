#pragma once
// Shared pieces of the sorting and selection entries: dims, the gradient that flows back through
// selected positions, op-table samples and float64 references along one dim.
#include <functional>
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln::sorting {

// dim wrapped against x (a 0-dim tensor takes dim 0 or -1).
int64_t along_dim(const char* op, const Tensor& x, int64_t dim);
// x's sizes with dim's size replaced by n (x itself when 0-dim).
SymShape with_dim_size(const Tensor& x, int64_t dim, const SymInt& n);

// The size of an output that depends on x's data (unique, bincount): a new symbol when x's
// sizes are symbolic (its example value is upper_bound's); an error for plain meta tensors.
SymInt data_dependent_size(const char* op, const Tensor& x, const SymInt& upper_bound);

// The gradient of values picked from x at `indices` along dim (positions may repeat: their
// gradients add up). With keepdim false, grad and indices lack dim (kthvalue, median, mode).
// Undefined when grad is.
Tensor select_backward(const Tensor& grad, const Tensor& indices, int64_t dim, const Tensor& x,
                       bool keepdim = true);
// out[..., j, ...] = x[..., indices[..., j, ...], ...] along dim (indices within range).
Tensor select_along_dim(const Tensor& x, const Tensor& indices, int64_t dim);

// Inputs for ops along one dim: rows, columns, a middle dim, non-contiguous, transposed, long
// rows, 0-dim and zero-size. attrs(dim, length) makes a sample's attributes.
using DimAttrs = std::function<Attrs(int64_t dim, int64_t length)>;
std::vector<OpSample> along_dim_samples(ScalarType dtype, const DimAttrs& attrs,
                                        bool zero_size_dim = true);
// The error sample of a dim out of range (2 for a [3, 4] input).
OpErrorSample dim_error_sample(const DimAttrs& attrs);
// Small integer values with many ties (for dtypes where ties must resolve as PyTorch's).
Tensor tied_values(std::vector<int64_t> shape, ScalarType dtype, int64_t distinct);

// Float64 reference along one dim: f maps a slice's values to the outputs' slices (all of one
// length m); each output has x's shape with dim's size m (keepdim false drops dim when m == 1).
// Where some slices give fewer outputs (positions left out on ties), only the outputs every
// slice gives are returned.
using SliceFn = std::function<std::vector<std::vector<double>>(const std::vector<double>&)>;
std::vector<Tensor> reference_slices(const Tensor& x, int64_t dim, bool keepdim, const SliceFn& f);
// Positions 0..n-1 of a slice ordered by value (NaN last, ties by position).
std::vector<int64_t> stable_order(const std::vector<double>& v, bool descending = false);
bool has_ties(const std::vector<double>& v);

}  // namespace kiln::sorting
