#pragma once
// Pieces shared by the nn op families: float64 views of data for references, reductions of
// per-element losses, and dtype plumbing for kernels that compute in float or double.
#include <vector>

#include "kiln/backend/cpu/loops.h"
#include "kiln/ops/nn.h"
#include "kiln/ops/registry.h"

namespace kiln::nn_util {

// Row-major float64 copy of any tensor's values (references and integer targets).
std::vector<double> to_doubles(const Tensor& t);
std::vector<int64_t> to_ints(const Tensor& t);
// A float64 tensor of the given shape from row-major values.
Tensor from_doubles(const std::vector<double>& v, std::vector<int64_t> shape);
std::vector<int64_t> concrete_sizes(const Tensor& t);

// Reduction as an op attribute and back.
int64_t reduction_attr(Reduction r);
Reduction reduction_of(const char* op, int64_t v);
// Mean, sum or the tensor itself.
Tensor apply_reduction(const Tensor& loss, Reduction r);
const char* reduction_name(Reduction r);

// nll_loss's check of one class index (ignore_index passes); compiled cross_entropy makes it too.
void check_class_index(int64_t t, int64_t classes, int64_t ignore_index);

// Calls f(T{}) for float and double storage types; Half/BFloat16 run as float on a float copy
// (kernels then write back with a cast), so each kernel instantiates two types only.
template <class F>
void visit_compute(ScalarType t, const char* op, F&& f) {
  if (t == kFloat64) return f(double{});
  KILN_CHECK(is_floating_point(t), op, ": expected a floating point tensor, got ", t);
  f(float{});
}
// The input in the kernel's compute dtype (float64 stays, other floats become float32), dense.
Tensor as_compute(const Tensor& t);
// Copies a compute-dtype result into an output of possibly lower precision.
void store(const Tensor& out, const Tensor& computed);

extern const std::vector<ScalarType> kNNDtypes;  // float64, float32, bfloat16

}  // namespace kiln::nn_util
