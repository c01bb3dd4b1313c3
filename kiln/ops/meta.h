#pragma once
// Shared pieces of meta functions: dim wrapping, broadcasting and type promotion on SymInts.
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln::meta {

// Wraps a possibly negative dim into [0, ndim); a clear error names the op otherwise.
int64_t wrap_dim(const char* op, int64_t dim, int64_t ndim);
std::vector<int64_t> wrap_dims(const char* op, IntArrayRef dims, int64_t ndim);

// Broadcast shape of several shapes (PyTorch's rules); the error names the op and the shapes.
SymShape broadcast_shapes(const char* op, const std::vector<SymShape>& shapes);

// PyTorch's result_type over the defined tensors: dimensioned tensors, then 0-dim tensors,
// then wrapped numbers, each participating only when it raises the category.
ScalarType result_type(const std::vector<Tensor>& tensors);
// The dtype a float-valued op (exp, sqrt, mean, ...) computes in for input dtype t.
inline ScalarType to_float_dtype(ScalarType t) {
  return is_floating_point(t) ? t : get_default_dtype();
}

TensorSpec spec(SymShape sizes, ScalarType dtype, Device device);
// The output list of a single-output op.
std::vector<TensorSpec> one_spec(SymShape sizes, ScalarType dtype, Device device);

// Meta functions of common op shapes.
std::vector<TensorSpec> unary(const std::vector<Tensor>& in, const Attrs&);        // same dtype
std::vector<TensorSpec> unary_float(const std::vector<Tensor>& in, const Attrs&);  // int -> float
std::vector<TensorSpec> unary_bool(const std::vector<Tensor>& in, const Attrs&);   // -> bool
// Broadcasting ops over all tensor inputs; `dtype` maps the promoted dtype to the output's.
enum class ResultKind { Promote, Float, Bool };
MetaFn broadcast(const char* op, ResultKind kind);
// In-place: output is input 0; checks the broadcast result fits it and the dtype casts safely.
std::vector<TensorSpec> inplace_of(const char* op, const std::vector<Tensor>& in,
                                   ScalarType result);

}  // namespace kiln::meta
