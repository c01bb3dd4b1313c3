#pragma once
// The one path every op call takes (ARCHITECTURE.md §5): the active mode, if any; then autograd
// when an input requires grad; then the meta function and the device kernel.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln {

struct OpDef;
class Attrs;

// Whether autograd records (thread-local). kiln::NoGradGuard flips it for a scope.
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// A mode intercepts every op call made while it is on the (thread-local) mode stack. While its
// handle() runs it is off the stack, so the ops it calls go to the modes below it, then to
// autograd and the kernels.
class DispatchMode {
 public:
  virtual ~DispatchMode() = default;
  virtual std::vector<Tensor> handle(const OpDef& op, const std::vector<Tensor>& inputs,
                                     const Attrs& attrs) = 0;
};
class ModeGuard {
 public:
  explicit ModeGuard(std::shared_ptr<DispatchMode> mode);
  ~ModeGuard();
  ModeGuard(const ModeGuard&) = delete;
  ModeGuard& operator=(const ModeGuard&) = delete;
};

// The entry point the op functions use.
std::vector<Tensor> call_op(const OpDef& op, std::vector<Tensor> inputs, const Attrs& attrs);
Tensor call_op1(const OpDef& op, std::vector<Tensor> inputs, const Attrs& attrs);
// Below autograd: size outputs with the meta function, allocate them, run the device kernel.
std::vector<Tensor> run_kernel(const OpDef& op, const std::vector<Tensor>& inputs,
                               const Attrs& attrs);
// Only the meta function: outputs with shapes, strides, dtypes and devices but no data.
std::vector<Tensor> run_meta(const OpDef& op, const std::vector<Tensor>& inputs,
                             const Attrs& attrs);

// How a call computes its outputs below autograd: run_kernel, or a function transform's rule.
using ComputeFn = std::function<std::vector<Tensor>()>;
// kiln/autograd installs itself here; core never includes it. With `compute` the hook records
// the call and runs compute (grad mode left as it is) in place of run_kernel.
using AutogradHook = std::vector<Tensor> (*)(const OpDef&, const std::vector<Tensor>&, const Attrs&,
                                             const ComputeFn* compute);
void set_autograd_hook(AutogradHook hook);
// Records the call on the autograd graph (its inputs that require grad get edges) and computes
// it with `compute`: how a transform's mode puts its wrapped tensors on the graph.
std::vector<Tensor> call_autograd(const OpDef& op, const std::vector<Tensor>& inputs,
                                  const Attrs& attrs, const ComputeFn& compute);

// Meta mode: every op (factories included) produces meta tensors; nothing is computed.
class MetaMode final : public DispatchMode {
 public:
  std::vector<Tensor> handle(const OpDef& op, const std::vector<Tensor>& inputs,
                             const Attrs& attrs) override;
};

// Recording mode: captures each op a function executes, with its attributes and shapes, then
// lets it run normally.
struct RecordedOp {
  std::string name;
  std::string attrs;
  std::vector<SymShape> input_sizes;
  std::vector<SymShape> output_sizes;
  std::vector<ScalarType> output_dtypes;
};
class RecordingMode final : public DispatchMode {
 public:
  std::vector<Tensor> handle(const OpDef& op, const std::vector<Tensor>& inputs,
                             const Attrs& attrs) override;
  const std::vector<RecordedOp>& ops() const { return ops_; }

 private:
  std::vector<RecordedOp> ops_;
};

// A meta tensor (no data) with the given, possibly symbolic, sizes: what the tracer feeds ops.
Tensor empty_meta(SymIntList sizes, ScalarType dtype = get_default_dtype(),
                  Device device = default_device());

}  // namespace kiln
