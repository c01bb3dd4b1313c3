#include "kiln/func/vmap_mode.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>

#include "kiln/core/error.h"
#include "kiln/core/generator.h"
#include "kiln/func/batched.h"
#include "kiln/func/batching_rules.h"
#include "kiln/ops/registry.h"

namespace kiln::func {
namespace {
std::mutex g_fallback_mu;
std::vector<std::string> g_fallback_ops;

// The loop is slow: say so once per op, as PyTorch's vmap performance warning.
void note_fallback(const OpDef& op) {
  std::lock_guard<std::mutex> lock(g_fallback_mu);
  for (const auto& n : g_fallback_ops)
    if (n == op.name) return;
  g_fallback_ops.push_back(op.name);
  std::fprintf(stderr,
               "kiln: vmap runs %s once per batch element: it has no batching rule for these "
               "inputs (slower). Reported once per op.\n",
               op.name.c_str());
}

bool requires_grad(const Tensor& t) { return t.defined() && t.requires_grad(); }
}  // namespace

std::vector<std::string> vmap_fallback_ops() {
  std::lock_guard<std::mutex> lock(g_fallback_mu);
  return g_fallback_ops;
}

namespace detail {

std::vector<Tensor> VmapMode::handle(const OpDef& op, const std::vector<Tensor>& inputs,
                                     const Attrs& attrs) {
  KILN_CHECK(!(op.is_random && randomness_ == Randomness::Error), "vmap: ", op.name,
             " is a random op, and vmap's randomness is \"error\"; pass randomness \"same\" "
             "(one draw for the whole batch) or \"different\" (one per batch element)");
  std::vector<Tensor> values(inputs.size());
  std::vector<std::optional<int64_t>> bdims(inputs.size());
  bool any_batched = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (const Batched* b = batched_at(inputs[i], level_)) {
      values[i] = b->value;
      bdims[i] = b->bdim;
      any_batched = true;
    } else {
      values[i] = inputs[i];
    }
  }
  const bool draws_per_element = op.is_random && randomness_ == Randomness::Different;
  if (!any_batched && !draws_per_element) return call_op(op, inputs, attrs);
  ComputeFn compute = [&] { return batch(op, inputs, values, bdims, attrs); };
  // A grad inside this vmap tracks the batched tensors themselves: record the op on them (the
  // physical ops below are recorded too where a grad outside the vmap tracks their inputs).
  if (GradMode::is_enabled() && std::any_of(inputs.begin(), inputs.end(), requires_grad))
    return call_autograd(op, inputs, attrs, compute);
  return compute();
}

std::vector<Tensor> VmapMode::batch(const OpDef& op, const std::vector<Tensor>& inputs,
                                    const std::vector<Tensor>& values,
                                    const std::vector<std::optional<int64_t>>& bdims,
                                    const Attrs& attrs) const {
  if (op.is_inplace) {
    // A batched result (from batched inputs, or one draw per element) needs a batched input 0.
    bool batched_result = op.is_random && randomness_ == Randomness::Different;
    for (size_t i = 1; i < bdims.size(); ++i) batched_result = batched_result || bdims[i];
    KILN_CHECK(bdims.at(0) || !batched_result, "vmap: ", op.name,
               " writes its batched result into input 0, which is not batched; write into a "
               "batched tensor, or use the out-of-place op");
  }
  BatchCall call{values, bdims, attrs, batch_size_};
  std::optional<BatchResult> r;
  if (!op.is_random) r = apply_batch_rule(op, call);
  if (!r && op.is_random && randomness_ == Randomness::Same) {
    // One draw for the whole batch: every element replays the generator from the same state.
    Generator* g = nullptr;
    for (size_t i = 0; i < attrs.size() && !g; ++i)
      if (const auto* p = std::get_if<Generator*>(&attrs[i])) g = *p;
    if (!g) g = &default_generator(values.empty() ? Device(kCPU) : values[0].device());
    const GeneratorState start = g->get_state();
    r = batch_loop(op, call, [&] { g->set_state(start); });
  } else if (!r) {
    if (!op.is_random) note_fallback(op);
    r = batch_loop(op, call);
  }
  std::vector<Tensor> outs(r->values.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    if (op.is_inplace && i == 0) {
      outs[i] = inputs[0];
    } else if (r->bdims[i]) {
      outs[i] = make_batched(r->values[i], *r->bdims[i], level_);
    } else {
      outs[i] = r->values[i];
    }
  }
  return outs;
}

}  // namespace detail
}  // namespace kiln::func
