#include "kiln/amp/autocast.h"

#include <memory>
#include <unordered_set>

#include "kiln/core/dispatch.h"
#include "kiln/core/error.h"
#include "kiln/ops/registry.h"

namespace kiln {
namespace {

struct AutocastState {
  bool enabled = false;
  ScalarType dtype = kBFloat16;
  bool mode_on_stack = false;
};
thread_local AutocastState t_state;

enum class CastPolicy { None, Lower, Float32 };

std::unordered_set<const OpDef*> entries(const std::vector<std::string>& names) {
  std::unordered_set<const OpDef*> set;
  for (const auto& n : names) set.insert(&get_op(n));
  return set;
}

CastPolicy policy_of(const OpDef& op) {
  static const std::unordered_set<const OpDef*> lower = entries(amp::lower_precision_ops());
  static const std::unordered_set<const OpDef*> float32 = entries(amp::float32_ops());
  if (lower.count(&op)) return CastPolicy::Lower;
  if (float32.count(&op)) return CastPolicy::Float32;
  return CastPolicy::None;
}

class AutocastMode final : public DispatchMode {
 public:
  std::vector<Tensor> handle(const OpDef& op, const std::vector<Tensor>& inputs,
                             const Attrs& attrs) override {
    const CastPolicy policy = t_state.enabled ? policy_of(op) : CastPolicy::None;
    if (policy == CastPolicy::None) return call_op(op, inputs, attrs);
    std::vector<Tensor> args = inputs;
    for (Tensor& t : args) {
      if (!t.defined() || t.impl()->is_wrapped_number()) continue;
      const ScalarType from = t.dtype();
      if (policy == CastPolicy::Lower && from == kFloat32) t = t.to(t_state.dtype);
      if (policy == CastPolicy::Float32 && (from == kBFloat16 || from == kFloat16))
        t = t.to(kFloat32);
    }
    return call_op(op, std::move(args), attrs);
  }
};

}  // namespace

autocast::autocast(Device device, ScalarType dtype, bool enabled)
    : was_enabled_(t_state.enabled), was_dtype_(t_state.dtype) {
  KILN_CHECK(device.is_cpu(), "autocast: only the CPU is supported, got ", device,
             " (CUDA autocast comes with the CUDA backend's issue)");
  KILN_CHECK(dtype == kBFloat16 || dtype == kFloat16,
             "autocast: the CPU's autocast dtype must be bfloat16 or float16, got ", dtype);
  t_state.enabled = enabled;
  if (enabled) t_state.dtype = dtype;
  if (enabled && !t_state.mode_on_stack) {
    mode_ = std::make_unique<ModeGuard>(std::make_shared<AutocastMode>());
    t_state.mode_on_stack = true;
  }
}

autocast::~autocast() {
  t_state.enabled = was_enabled_;
  t_state.dtype = was_dtype_;
  if (mode_) {
    mode_.reset();
    t_state.mode_on_stack = false;
  }
}

bool is_autocast_enabled() { return t_state.enabled; }
ScalarType get_autocast_dtype() { return t_state.dtype; }

namespace amp {

// PyTorch's CPU lower_precision_fp list, as far as Kiln has the ops (linear and matmul are
// composites of these).
const std::vector<std::string>& lower_precision_ops() {
  static const std::vector<std::string> ops = {"mm",
                                               "bmm",
                                               "addmm",
                                               "baddbmm",
                                               "convolution",
                                               "scaled_dot_product_attention",
                                               "_scaled_dot_product_flash_attention_for_cpu"};
  return ops;
}

// Softmax, normalisations, reductions that lose precision, and losses.
const std::vector<std::string>& float32_ops() {
  static const std::vector<std::string> ops = {
      "softmax",   "log_softmax", "layer_norm", "group_norm", "batch_norm", "rms_norm", "norm",
      "logsumexp", "cumsum",      "cumprod",    "prod",       "nll_loss",   "ctc_loss"};
  return ops;
}

}  // namespace amp
}  // namespace kiln
