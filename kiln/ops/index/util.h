#pragma once
// Pieces shared by the index op entries (index_*.cpp, indexing.cpp): index normalisation, the
// expanded view that turns a 1-D index along `dim` into a gather/scatter index, in-place
// variants, and float64 reference helpers.
#include <initializer_list>
#include <string>
#include <vector>

#include "kiln/backend/cpu/scatter.h"
#include "kiln/ops/registry.h"

namespace kiln::index_ops {

// The dtypes the op-table tests run for ops that only move elements.
inline const std::vector<ScalarType> kMoveDtypes = {kFloat64, kFloat32, kFloat16,
                                                    kInt64,   kInt32,   kBool};

// The op `name` (looked up once per call site).
#define KILN_INDEX_OP(var, name) static const OpDef& var = get_op(name)

// Checks `index` is an int64 or int32 tensor; returns it as int64.
Tensor as_long(const char* op, const Tensor& index);
// A 0-dim or 1-D index as a 1-D int64 tensor with values wrapped into [0, size) (negatives
// counted from the end when allow_negative). Out-of-range values raise a kiln::Error.
Tensor checked_index_1d(const char* op, const Tensor& index, int64_t dim, int64_t size,
                        bool allow_negative);
// The index of a dim-wise gather/scatter equivalent to indexing `dim` with the 1-D idx: shape
// `sizes` with sizes[dim] = idx.sym_numel(), stride 0 along every other dim (a view of idx).
Tensor expand_index(const Tensor& idx, std::vector<int64_t> sizes, int64_t dim);

// The tensor a scatter-like kernel writes: out[0] itself when contiguous, else a contiguous
// temporary; it holds self's values. finish_output copies a temporary back into out[0].
Tensor scatter_target(const Tensor& out, const Tensor& self);
void finish_output(const Tensor& out, const Tensor& target);

// register_inplace(names, InplaceKind::Indexed) (kiln/ops/inplace.h): "<name>_" entries for
// ops whose results read any element of their inputs.
bool register_inplace(std::initializer_list<const char*> names);

// Float64 reference helpers: contiguous float64 / int64 copies, and flat <-> multi-index.
Tensor f64(const Tensor& t);
Tensor i64(const Tensor& t);
std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& sizes);
int64_t ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& sizes);
// PyTorch-style reduction of `values` ("sum", "prod", "mean", "amax", "amin", "assign": the last
// value); integer = true rounds a mean down.
double reduce_values(const std::vector<double>& values, const std::string& reduce, bool integer);

// A sample index with values in [0, high) (int64).
Tensor sample_index(std::vector<int64_t> shape, int64_t high);

}  // namespace kiln::index_ops
