#include "kiln/core/dispatch.h"

#include <algorithm>
#include <sstream>

#include "kiln/core/autograd_meta.h"
#include "kiln/core/cpu_fallback.h"
#include "kiln/core/device_backend.h"
#include "kiln/core/error.h"
#include "kiln/ops/registry.h"

namespace kiln {
namespace {
thread_local bool t_grad_enabled = true;
thread_local std::vector<std::shared_ptr<DispatchMode>> t_modes;
thread_local size_t t_mode_depth = 0;  // modes [0, depth) are active
// What each live ModeGuard replaced, innermost last. A guard made inside a mode's handle() sees
// the stack cut below that mode; the modes above the cut must come back when the guard ends.
struct ModeStackState {
  std::vector<std::shared_ptr<DispatchMode>> modes;
  size_t depth;
};
thread_local std::vector<ModeStackState> t_saved_mode_stacks;
AutogradHook g_autograd_hook = nullptr;

bool requires_grad(const Tensor& t) {
  if (!t.defined()) return false;
  const AutogradMeta* m = t.impl()->autograd_meta();
  return m && m->requires_grad;
}

// Restores the mode depth when the handling mode returns (or throws).
struct DepthRestore {
  size_t saved;
  ~DepthRestore() { t_mode_depth = saved; }
};

// The device of an op's inputs. CPU scalars (wrapped numbers and 0-dim tensors) may join
// tensors on any device; ops marked cross_device (copy_) take inputs on two devices.
Device pick_device(const OpDef& op, const std::vector<Tensor>& inputs) {
  const Tensor* first = nullptr;
  for (const auto& t : inputs) {
    if (!t.defined()) continue;
    if (t.is_cpu() && t.dim() == 0 && inputs.size() > 1) continue;
    if (!first) {
      first = &t;
    } else if (t.device() != first->device() && !op.cross_device) {
      KILN_FAIL(op.name, ": expected all tensors to be on the same device, but found ",
                first->device().resolved(), " and ", t.device().resolved());
    }
  }
  if (first) return first->device();
  for (const auto& t : inputs)
    if (t.defined()) return t.device();
  return default_device();
}

// The device whose kernel runs the call: the first device other than the CPU among the inputs
// and outputs (a factory's output device comes from its attributes; `_to_copy` from the CPU to
// a device runs that device's kernel, as does the copy back).
Device kernel_device(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outs) {
  for (const auto* list : {&inputs, &outs})
    for (const auto& t : *list)
      if (t.defined() && !t.is_cpu()) return t.device().resolved();
  return Device(kCPU);
}

Tensor make_output(TensorSpec&& s, const std::vector<Tensor>& inputs, bool meta) {
  if (s.inplace_of >= 0) return inputs.at(s.inplace_of);
  SymShape strides = s.strides.empty() ? contiguous_strides(s.sizes) : std::move(s.strides);
  if (s.view_of >= 0) {
    const Tensor& base = inputs.at(s.view_of);
    return Tensor(std::make_shared<TensorImpl>(base.impl()->storage(), s.dtype, std::move(s.sizes),
                                               std::move(strides), s.storage_offset));
  }
  Storage storage;
  if (meta) {
    storage = StorageImpl::meta(s.device);
  } else {
    const int64_t nbytes = layout_nbytes(s.sizes, strides, 0, element_size(s.dtype));
    storage = std::make_shared<StorageImpl>(static_cast<size_t>(nbytes), s.device);
  }
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), s.dtype, std::move(s.sizes),
                                             std::move(strides), 0));
}

// Kernels and meta functions read strided memory: sparse inputs must go through sparse ops.
void check_strided(const OpDef& op, const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i)
    KILN_CHECK(!inputs[i].defined() || inputs[i].impl()->layout() == Layout::Strided, op.name,
               ": input ", i,
               " is a sparse CSR tensor, but the op takes strided (dense) tensors; "
               "convert it with to_dense() or use kiln::sparse::mm");
}

// Note [Quantized tensors reach no kernel] (kiln/core/quantizer.h).
void check_not_quantized(const OpDef& op, const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || !is_quantized(inputs[i].dtype())) continue;
    const auto& e = inputs[i].impl()->extension();
    KILN_FAIL(op.name, ": input ", i, " is ", e ? e->describe() : std::string("a quantized tensor"),
              ", but the op takes real values: call dequantize() first (int_repr() gives the "
              "stored integers)");
  }
}

std::string describe_call(const std::vector<Tensor>& inputs, const Attrs& attrs) {
  constexpr size_t kMaxChars = 240;  // arguments can be long lists
  std::ostringstream os;
  os << "inputs (";
  for (size_t i = 0; i < inputs.size(); ++i) {
    os << (i ? ", " : "");
    if (inputs[i].defined())
      os << inputs[i].dtype() << SymIntArrayRef(inputs[i].impl()->sym_sizes());
    else
      os << "None";
  }
  os << "), attributes (" << attrs.to_string() << ")";
  std::string out = os.str();
  if (out.size() > kMaxChars) out = out.substr(0, kMaxChars) + "...";
  return out;
}

// Core checks throw without an op's name (error.h): the call that hit them adds it.
template <class F>
std::vector<Tensor> with_op_context(const OpDef& op, const std::vector<Tensor>& inputs,
                                    const Attrs& attrs, F&& f) {
  try {
    return f();
  } catch (...) {
    detail::rethrow_in(op.name, describe_call(inputs, attrs));
  }
}

bool any_meta(const std::vector<Tensor>& inputs) {
  for (const auto& t : inputs)
    if (t.defined() && (t.is_meta() || t.impl()->is_symbolic())) return true;
  return false;
}

// A transform's wrapped tensor is a meta tensor that only its mode may take apart.
void check_not_wrapped(const OpDef& op, const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].impl()->extension())
      KILN_FAIL(op.name, ": input ", i, " is ", inputs[i].impl()->extension()->describe(),
                ", used outside its transform (it escaped the function the transform runs, "
                "e.g. kept in a variable that outlives vmap's call)");
}

bool is_symbolic(const TensorSpec& s) {
  auto symbolic = [](const SymInt& v) { return v.is_symbolic(); };
  return std::any_of(s.sizes.begin(), s.sizes.end(), symbolic) ||
         std::any_of(s.strides.begin(), s.strides.end(), symbolic) ||
         s.storage_offset.is_symbolic();
}

// Outputs with symbolic sizes (a factory given symbolic sizes, under a trace) are meta tensors
// whatever `meta` says: allocating them would specialise their sizes to the hints.
std::vector<Tensor> make_outputs(const OpDef& op, const std::vector<Tensor>& inputs,
                                 const Attrs& attrs, bool meta) {
  KILN_CHECK(op.meta_, op.name, ": the op has no meta function");
  std::vector<TensorSpec> specs = op.meta_(inputs, attrs);
  for (const TensorSpec& spec : specs)
    KILN_CHECK(!is_quantized(spec.dtype), op.name, ": cannot make a tensor of dtype ", spec.dtype,
               "; quantized tensors come from quantize_per_tensor or quantize_per_channel");
  meta = meta || std::any_of(specs.begin(), specs.end(), is_symbolic);
  std::vector<Tensor> outs;
  outs.reserve(specs.size());
  for (auto& s : specs) outs.push_back(make_output(std::move(s), inputs, meta));
  return outs;
}
std::vector<Tensor> run_eager(const OpDef& op, const std::vector<Tensor>& inputs,
                              const Attrs& attrs) {
  Device device = pick_device(op, inputs);
  std::vector<Tensor> outs;
  if (!op.dynamic_output) {
    outs = make_outputs(op, inputs, attrs, /*meta=*/false);
    if (any_meta(outs)) return outs;
  }
  device = kernel_device(inputs, outs);
  const KernelFn& kernel = op.kernels[static_cast<int>(device.type())];
  if (!kernel && op.is_view && !op.dynamic_output) return outs;
  if (kernel) {
    DeviceIndexGuard on(device);
    kernel(inputs, outs, attrs);
  } else {
    KILN_CHECK(!device.is_cpu(), op.name, ": no kernel for device ", device);
    run_on_cpu(op, device, inputs, outs, attrs);
  }
  if (op.is_inplace) {
    // Input 0, and the other inputs a multi-tensor op (_fused_adam_) writes and returns.
    inputs.at(0).impl()->storage()->bump_version();
    for (const Tensor& o : outs)
      if (o.defined() && !o.is_same(inputs[0])) o.impl()->storage()->bump_version();
  }
  return outs;
}

}  // namespace

bool GradMode::is_enabled() { return t_grad_enabled; }
void GradMode::set_enabled(bool enabled) { t_grad_enabled = enabled; }

ModeGuard::ModeGuard(std::shared_ptr<DispatchMode> mode) {
  t_saved_mode_stacks.push_back({t_modes, t_mode_depth});
  t_modes.resize(t_mode_depth);
  t_modes.push_back(std::move(mode));
  t_mode_depth = t_modes.size();
}
ModeGuard::~ModeGuard() {
  ModeStackState& saved = t_saved_mode_stacks.back();
  t_modes = std::move(saved.modes);
  t_mode_depth = saved.depth;
  t_saved_mode_stacks.pop_back();
}

void set_autograd_hook(AutogradHook hook) { g_autograd_hook = hook; }

std::vector<Tensor> call_op(const OpDef& op, std::vector<Tensor> inputs, const Attrs& attrs) {
  if (t_mode_depth > 0) {
    DepthRestore restore{t_mode_depth};
    DispatchMode* mode = t_modes[t_mode_depth - 1].get();
    --t_mode_depth;
    return mode->handle(op, inputs, attrs);
  }
  if (t_grad_enabled && g_autograd_hook) {
    for (const auto& t : inputs)
      if (requires_grad(t)) return g_autograd_hook(op, inputs, attrs, nullptr);
  }
  return run_kernel(op, inputs, attrs);
}

std::vector<Tensor> call_autograd(const OpDef& op, const std::vector<Tensor>& inputs,
                                  const Attrs& attrs, const ComputeFn& compute) {
  KILN_CHECK(g_autograd_hook, op.name, ": autograd is not linked in");
  return g_autograd_hook(op, inputs, attrs, &compute);
}

Tensor call_op1(const OpDef& op, std::vector<Tensor> inputs, const Attrs& attrs) {
  auto outs = call_op(op, std::move(inputs), attrs);
  return std::move(outs.at(0));
}

std::vector<Tensor> run_meta(const OpDef& op, const std::vector<Tensor>& inputs,
                             const Attrs& attrs) {
  check_strided(op, inputs);
  check_not_quantized(op, inputs);
  pick_device(op, inputs);
  return with_op_context(op, inputs, attrs,
                         [&] { return make_outputs(op, inputs, attrs, /*meta=*/true); });
}

std::vector<Tensor> run_kernel(const OpDef& op, const std::vector<Tensor>& inputs,
                               const Attrs& attrs) {
  check_strided(op, inputs);
  check_not_quantized(op, inputs);
  if (any_meta(inputs)) {
    check_not_wrapped(op, inputs);
    return run_meta(op, inputs, attrs);
  }
  return with_op_context(op, inputs, attrs, [&] { return run_eager(op, inputs, attrs); });
}

std::vector<Tensor> MetaMode::handle(const OpDef& op, const std::vector<Tensor>& inputs,
                                     const Attrs& attrs) {
  return run_meta(op, inputs, attrs);
}

std::vector<Tensor> RecordingMode::handle(const OpDef& op, const std::vector<Tensor>& inputs,
                                          const Attrs& attrs) {
  RecordedOp rec{op.name, attrs.to_string(), {}, {}, {}};
  for (const auto& t : inputs)
    rec.input_sizes.push_back(t.defined() ? t.sym_sizes().sym_vec() : SymShape{});
  auto outs = call_op(op, inputs, attrs);
  for (const auto& t : outs) {
    rec.output_sizes.push_back(t.sym_sizes());
    rec.output_dtypes.push_back(t.dtype());
  }
  ops_.push_back(std::move(rec));
  return outs;
}

Tensor empty_meta(SymIntList sizes, ScalarType dtype, Device device) {
  SymShape s = std::move(sizes).get();
  SymShape strides = contiguous_strides(s);
  return Tensor(std::make_shared<TensorImpl>(StorageImpl::meta(device), dtype, std::move(s),
                                             std::move(strides), 0));
}

}  // namespace kiln
