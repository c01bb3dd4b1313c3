#pragma once
// The op registry: one OpDef per op holds everything the system knows about it (schema, meta
// function, kernels per device, backward, samples for the op-table tests). See ARCHITECTURE.md §4.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/ops/attrs.h"

namespace kiln {

// What a meta function says about one output.
struct TensorSpec {
  SymShape sizes;
  SymShape strides;  // empty: contiguous
  ScalarType dtype = ScalarType::Undefined;
  Device device;
  int view_of = -1;        // >= 0: a view sharing input view_of's storage, at storage_offset
  SymInt storage_offset = 0;
  int inplace_of = -1;     // >= 0: the output is that input itself (in-place ops)
};

struct BackwardContext {
  const std::vector<Tensor>& grads;    // gradient of each output; undefined when none flowed
  const std::vector<Tensor>& inputs;   // the forward inputs (when the op saves them)
  const std::vector<Tensor>& outputs;  // the forward outputs (when the op saves them)
  const Attrs& attrs;
  const std::vector<bool>& needs_input_grad;

  const Tensor& grad(size_t i = 0) const { return grads.at(i); }
  const Tensor& input(size_t i) const { return inputs.at(i); }
  const Tensor& output(size_t i = 0) const { return outputs.at(i); }
  bool needs_grad(size_t i) const { return i < needs_input_grad.size() && needs_input_grad[i]; }
};

// One representative call of an op, for the op-table tests.
struct OpSample {
  std::vector<Tensor> inputs;
  Attrs attrs;
  std::string desc;
  bool check_grad = true;  // false where finite differences are unreliable (kinks, ties)
};

// A call the op must reject, for the op-table tests: it throws a kiln::Error whose message
// starts with "<op name>: " and contains `expected` (the offending sizes, values or dtypes).
struct OpErrorSample {
  std::vector<Tensor> inputs;
  Attrs attrs;
  std::string expected;
  std::string desc;
  bool in_meta = true;  // false: the kernel checks it (it reads values), so meta tensors pass
};

using MetaFn = std::function<std::vector<TensorSpec>(const std::vector<Tensor>&, const Attrs&)>;
using KernelFn =
    std::function<void(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&)>;
using BackwardFn = std::function<std::vector<Tensor>(const BackwardContext&)>;
using SampleFn = std::function<std::vector<OpSample>(ScalarType dtype)>;
// Float64 reference computed independently of the kernels (naive loops or closed forms).
using ReferenceFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&, const Attrs&)>;
using ErrorSampleFn = std::function<std::vector<OpErrorSample>()>;

struct OpDef {
  std::string name;
  std::string schema_;
  MetaFn meta_;
  KernelFn kernels[kNumDeviceTypes];
  BackwardFn backward_;
  SampleFn samples_;
  ReferenceFn reference_;
  ErrorSampleFn error_samples_;
  std::vector<ScalarType> dtypes_;  // dtypes the op-table tests run
  std::string lowering_;            // how the compiler expresses it ("pointwise:...", "view", ...)
  bool has_jvp = false;
  bool has_vmap = false;
  bool saves_inputs = true;
  bool saves_outputs = false;
  // The backward reads only the inputs' sizes/strides/dtypes (views, sum, ...): autograd keeps
  // data-less aliases, so later in-place changes to the inputs are not reported as errors.
  bool saves_input_metadata = false;
  bool is_view = false;
  bool is_inplace = false;
  bool is_random = false;      // consumes the generator: reruns differ
  bool dynamic_output = false;  // the kernel allocates outputs (sizes depend on data)
  double atol = -1, rtol = -1;  // op-specific test tolerances (negative: the dtype's default)

  OpDef& schema(std::string s) { schema_ = std::move(s); return *this; }
  OpDef& meta(MetaFn f) { meta_ = std::move(f); return *this; }
  OpDef& kernel(DeviceType d, KernelFn f) { kernels[static_cast<int>(d)] = std::move(f); return *this; }
  OpDef& cpu(KernelFn f) { return kernel(DeviceType::CPU, std::move(f)); }
  OpDef& backward(BackwardFn f) { backward_ = std::move(f); return *this; }
  OpDef& samples(SampleFn f) { samples_ = std::move(f); return *this; }
  OpDef& reference(ReferenceFn f) { reference_ = std::move(f); return *this; }
  OpDef& error_samples(ErrorSampleFn f) { error_samples_ = std::move(f); return *this; }
  OpDef& dtypes(std::vector<ScalarType> d) { dtypes_ = std::move(d); return *this; }
  OpDef& lowering(std::string l) { lowering_ = std::move(l); return *this; }
  OpDef& view() { is_view = true; saves_input_metadata = true; return *this; }
  OpDef& save_metadata() { saves_input_metadata = true; return *this; }
  OpDef& inplace() { is_inplace = true; return *this; }
  OpDef& random() { is_random = true; return *this; }
  OpDef& dynamic() { dynamic_output = true; return *this; }
  OpDef& save_outputs(bool inputs_too = false) { saves_outputs = true; saves_inputs = inputs_too; return *this; }
  OpDef& tolerance(double a, double r) { atol = a; rtol = r; return *this; }

  bool has_kernel(DeviceType d) const { return static_cast<bool>(kernels[static_cast<int>(d)]); }
  bool differentiable() const { return static_cast<bool>(backward_); }
};

// Creates (at static-initialisation time) the entry for `name`; names are unique.
OpDef& register_op(std::string name);
const OpDef& get_op(std::string_view name);
const OpDef* find_op(std::string_view name);
std::vector<const OpDef*> all_ops();  // sorted by name

#define KILN_OP_CONCAT_(a, b) a##b
#define KILN_OP_CONCAT(a, b) KILN_OP_CONCAT_(a, b)
// KILN_REGISTER_OP(mul).schema(...).meta(...)...;
#define KILN_REGISTER_OP(name) \
  [[maybe_unused]] static ::kiln::OpDef& KILN_OP_CONCAT(kiln_op_, __COUNTER__) = ::kiln::register_op(#name)

}  // namespace kiln
