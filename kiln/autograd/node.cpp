#include "kiln/autograd/node.h"

#include <atomic>
#include <mutex>

#include "kiln/autograd/deferred_release.h"
#include "kiln/core/autograd_meta.h"
#include "kiln/core/dispatch.h"
#include "kiln/ops/ops.h"

namespace kiln::autograd {
namespace {
std::atomic<uint64_t> g_next_sequence_nr{0};
}

Node::Node() : sequence_nr_(g_next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {}

Node::~Node() {
  std::vector<std::shared_ptr<Node>> next;
  next.reserve(next_edges_.size());
  for (auto& e : next_edges_) next.push_back(std::move(e.node));
  defer_release(std::move(next), {});
}

bool Node::describe_for_trace(std::vector<Tensor>&, std::ostream&) { return false; }

std::vector<Tensor> Node::apply_traced(std::vector<Tensor>&&, const std::vector<Tensor>&) {
  KILN_CHECK(false, name(), " cannot be traced by compiled autograd");
  return {};
}

// A hook may replace a gradient, but not with one of another type or size (PyTorch's wording).
void run_tensor_hook(const Node::TensorHook& hook, Tensor& grad) {
  Tensor r = hook(grad);
  if (!r.defined()) return;
  KILN_CHECK(r.dtype() == grad.dtype() && r.device() == grad.device(),
             "backward: hook has changed the type of value (was ", grad.toString(), " got ",
             r.toString(), ")");
  KILN_CHECK(r.sym_sizes() == grad.sym_sizes(),
             "backward: hook has changed the size of value (was ", grad.sym_sizes(), " got ",
             r.sym_sizes(), ")");
  grad = std::move(r);
}

void retain_grad_into(const std::weak_ptr<TensorImpl>& tensor, const Tensor& grad) {
  std::shared_ptr<TensorImpl> impl = tensor.lock();
  if (!impl) return;
  AutogradMeta& m = impl->ensure_autograd_meta();
  m.grad = m.grad.defined() ? add(m.grad, grad) : grad.detach().clone();
}

void Node::add_pre_hook(uint32_t output_nr, TensorHook hook) {
  pre_hooks_.emplace_back(output_nr, std::move(hook));
}

void Node::add_retains_grad(uint32_t output_nr, std::weak_ptr<TensorImpl> tensor) {
  retains_grad_.emplace_back(output_nr, std::move(tensor));
}

void Node::run_pre_hooks(std::vector<Tensor>& grads) const {
  for (const auto& [nr, hook] : pre_hooks_)
    if (nr < grads.size() && grads[nr].defined()) run_tensor_hook(hook, grads[nr]);
  for (const auto& [nr, tensor] : retains_grad_)
    if (nr < grads.size() && grads[nr].defined()) retain_grad_into(tensor, grads[nr]);
}

// The incoming gradient itself when nothing else holds it or its memory and it is contiguous
// (PyTorch's AccumulateGrad steals it too); otherwise a copy. Another leaf may have received the
// same tensor (both inputs of an add do), or a broadcast of one value: an in-place change of one
// .grad (an optimizer's, clip_grad_norm_'s) must not reach another or write one element twice.
namespace {
Tensor owned(Tensor g) {
  if (!g.is_contiguous()) return g.contiguous();
  const bool alone = g.impl_ptr().use_count() == 1 && g.impl()->storage().use_count() == 1;
  return alone ? g : g.clone();
}
}  // namespace

AccumulateGrad::AccumulateGrad(Tensor leaf) : leaf_(std::move(leaf)) {}

void AccumulateGrad::run_pre_hooks(std::vector<Tensor>& grads) const {
  Node::run_pre_hooks(grads);
  const AutogradMeta* m = leaf_.impl()->autograd_meta();
  if (!m || grads.empty() || !grads[0].defined()) return;
  for (const auto& hook : m->hooks) run_tensor_hook(hook, grads[0]);
}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grads) {
  Tensor g = std::move(grads.at(0));
  if (!g.defined()) return {};
  AutogradMeta& m = leaf_.impl()->ensure_autograd_meta();
  if (!GradMode::is_enabled()) g = g.detach();
  const std::lock_guard<std::mutex> lock(mutex_);
  // Out of place: the incoming gradient may be shared with a caller or another leaf.
  m.grad = m.grad.defined() ? add(m.grad, g) : owned(std::move(g));
  // By index: a hook may register another one.
  for (size_t i = 0; i < m.post_accumulate_grad_hooks.size(); ++i) {
    auto hook = m.post_accumulate_grad_hooks[i];  // a copy: the hook may add hooks
    hook(leaf_);
  }
  return {};
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined()) return {};
  AutogradMeta* m = t.impl()->autograd_meta();
  if (!m) return {};
  if (m->grad_fn) return Edge{m->grad_fn, m->output_nr};
  if (!m->requires_grad) return {};
  // Threads recording ops on the same leaf must get the same accumulator: a second one would
  // make a graph whose leaf autograd::grad cannot find.
  static std::mutex accumulator_mutex;
  const std::lock_guard<std::mutex> lock(accumulator_mutex);
  std::shared_ptr<Node> acc = m->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    m->grad_accumulator = acc;
  }
  return Edge{acc, 0};
}

}  // namespace kiln::autograd
