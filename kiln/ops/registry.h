#pragma once
// The op registry: one OpDef per op holds everything the system knows about it (schema, meta
// function, kernels per device, backward, samples for the op-table tests). See ARCHITECTURE.md §4.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/ops/attrs.h"
#include "kiln/ops/lowering.h"

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
  const std::vector<Tensor>& inputs;   // the forward inputs the op saves (others undefined)
  const std::vector<Tensor>& outputs;  // the forward outputs the op saves (others undefined)
  const Attrs& attrs;
  const std::vector<bool>& needs_input_grad;
  // Bit i is set once the formula asked for input/output i (the op-table tests compare these
  // with what the op declares it saves).
  mutable uint64_t inputs_read = 0;
  mutable uint64_t outputs_read = 0;

  const Tensor& grad(size_t i = 0) const { return grads.at(i); }
  const Tensor& input(size_t i) const {
    if (i < 64) inputs_read |= uint64_t{1} << i;
    return inputs.at(i);
  }
  const Tensor& output(size_t i = 0) const {
    if (i < 64) outputs_read |= uint64_t{1} << i;
    return outputs.at(i);
  }
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

// One call under vmap (kiln/func): each input's physical tensor and the dim its batch is at
// (nullopt: the input is the same for every batch element). A batching rule computes the call
// for the whole batch with ordinary ops and says where each output's batch is.
struct BatchCall {
  const std::vector<Tensor>& values;
  const std::vector<std::optional<int64_t>>& bdims;
  const Attrs& attrs;
  int64_t batch_size;

  // Input i with its batch, if it has one, at dim 0.
  Tensor batch_in_front(size_t i) const;
  // Input i with its batch at dim 0; an input that is not batched is expanded over the batch.
  Tensor batched(size_t i) const;
};
struct BatchResult {
  std::vector<Tensor> values;
  std::vector<std::optional<int64_t>> bdims;
};
// nullopt: this call is not one the rule handles; it runs as vmap's loop over the batch.
using BatchRuleFn = std::function<std::optional<BatchResult>(const BatchCall&)>;

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
  lowering::Lowering lowering_;     // how the compiler expresses it (kiln/ops/lowering.h)
  BatchRuleFn batch_rule_;  // vmap's rule for this op; families get theirs in kiln/func
  // What autograd keeps for the backward formula, bit i standing for input/output i: exactly
  // what the formula reads (PyTorch's derivatives.yaml decides the same way), so that in-place
  // changes to anything else after the op (`out = bn(x); out += residual;`) stay legal. What is
  // not kept reads as an undefined tensor in the BackwardContext.
  uint64_t saved_inputs = ~uint64_t{0};
  uint64_t saved_outputs = 0;
  // Inputs whose sizes/strides/dtype/device are all the backward reads (views, sum, the self of
  // index_select, ...): autograd keeps data-less aliases of them, so later in-place changes to
  // those inputs are not reported as errors (as PyTorch, which saves their sizes).
  uint64_t metadata_inputs = 0;
  bool is_view = false;
  bool is_inplace = false;
  bool is_random = false;      // consumes the generator: reruns differ
  bool dynamic_output = false;  // the kernel allocates outputs (sizes depend on data)
  bool cross_device = false;    // inputs may be on different devices (copy_)
  // Whether the backward formula is itself differentiable: forward mode (kiln::func::jvp, the
  // vjp of the vjp) and higher-order gradients need it. Fused backward kernels without a
  // backward of their own say no, and those transforms then fail naming the op.
  bool backward_differentiable = true;
  // Whether autograd fills the gradients of outputs that received none with zeros before the
  // backward formula runs (multi-output ops). Formulas that check grad(i).defined() turn it off
  // and save those launches, as PyTorch's ctx.set_materialize_grads(False).
  bool materializes_grads = true;
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
  OpDef& batch_rule(BatchRuleFn f) { batch_rule_ = std::move(f); return *this; }
  OpDef& lowering(std::string_view l) { lowering_ = lowering::Lowering::parse(l); return *this; }
  OpDef& lowering(lowering::Lowering l) { lowering_ = std::move(l); return *this; }
  OpDef& view() { is_view = true; metadata_inputs = ~uint64_t{0}; return *this; }
  // Every saved input, or only these, is saved as metadata.
  OpDef& save_metadata() { metadata_inputs = ~uint64_t{0}; return *this; }
  OpDef& save_metadata(std::initializer_list<int> which) { metadata_inputs = bits(which); return *this; }
  OpDef& inplace() { is_inplace = true; return *this; }
  OpDef& random() { is_random = true; return *this; }
  OpDef& dynamic() { dynamic_output = true; return *this; }
  OpDef& allow_cross_device() { cross_device = true; return *this; }
  OpDef& first_order_only() { backward_differentiable = false; return *this; }
  OpDef& materialize_grads(bool on) { materializes_grads = on; return *this; }
  // The backward reads every output (and, with inputs_too, every input).
  OpDef& save_outputs(bool inputs_too = false) {
    saved_outputs = ~uint64_t{0};
    saved_inputs = inputs_too ? ~uint64_t{0} : 0;
    return *this;
  }
  // The backward reads only these outputs / inputs.
  OpDef& save_outputs(std::initializer_list<int> which) { saved_outputs = bits(which); return *this; }
  OpDef& save_inputs(std::initializer_list<int> which) { saved_inputs = bits(which); return *this; }
  OpDef& tolerance(double a, double r) { atol = a; rtol = r; return *this; }

  bool has_kernel(DeviceType d) const { return static_cast<bool>(kernels[static_cast<int>(d)]); }
  bool differentiable() const { return static_cast<bool>(backward_); }
  bool saves_input(size_t i) const { return i < 64 && (saved_inputs >> i & 1); }
  bool saves_output(size_t i) const { return i < 64 && (saved_outputs >> i & 1); }
  bool saves_input_metadata(size_t i) const { return i < 64 && (metadata_inputs >> i & 1); }

 private:
  static uint64_t bits(std::initializer_list<int> which) {
    uint64_t b = 0;
    for (int i : which) b |= uint64_t{1} << i;
    return b;
  }
};

// Installs a device backend's kernel for an op (at the backend's load); the op's in-place
// variant (`name_`), if it has one, gets its in-place form too.
void set_kernel(std::string_view name, DeviceType device, KernelFn kernel);

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
