#include "kiln/compile/captured_state.h"

#include <algorithm>
#include <unordered_set>

#include "kiln/autograd/grad_mode.h"
#include "kiln/compile/joint.h"
#include "kiln/compile/tracer.h"
#include "kiln/core/autograd_meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/registry.h"

namespace kiln::compiler {
namespace {

// The field itself: reading it through Tensor::grad() would report the read to the capture.
Tensor& grad_field(const Tensor& t) { return t.impl()->ensure_autograd_meta().grad; }

bool has_hooks(const Tensor& t) {
  const AutogradMeta* m = t.impl()->autograd_meta();
  return m && (!m->hooks.empty() || !m->post_accumulate_grad_hooks.empty());
}

}  // namespace

CapturedState::~CapturedState() { restore(); }

CapturedState::Slot& CapturedState::slot(const Tensor& t) {
  auto [it, fresh] = index_.emplace(t.impl(), slots_.size());
  if (fresh) slots_.push_back({t, grad_field(t)});
  return slots_[it->second];
}

// A traced tensor stands for a value the function computed; its .grad is its own business (and
// always undefined, as autograd does not record in a capture).
void CapturedState::reading_grad(const Tensor& t) {
  if (t.impl()->is_traced()) return;
  Slot& s = slot(t);
  s.read_first = s.read_first || !s.written;
}

void CapturedState::writing_grad(const Tensor& t) {
  if (t.impl()->is_traced()) return;
  slot(t).written = true;
}

void CapturedState::restore() {
  for (const Slot& s : slots_) grad_field(s.leaf) = s.original;
  slots_.clear();
  index_.clear();
}

void CapturedState::accumulate(const Tensor& leaf, const Tensor& g) {
  const Tensor& sum = leaf.grad();
  Tensor next = sum.defined() ? sum + g : g;
  leaf.mutable_grad() = std::move(next);
}

std::vector<Tensor> CapturedState::backward(const std::vector<Tensor>& roots,
                                            const std::vector<Tensor>& grad_roots,
                                            const std::vector<Tensor>* inputs, bool keep_graph,
                                            bool create_graph, bool allow_unused) {
  if (create_graph)
    throw GraphBreak("backward with create_graph=true inside a compiled function is not captured");
  KILN_CHECK(grad_roots.empty() || grad_roots.size() == roots.size(), "backward: got ",
             grad_roots.size(), " gradients for ", roots.size(), " tensors");
  const NoGradGuard no_grad;
  const size_t nodes = tracer_.graph().nodes.size();
  const std::vector<char> needs = values_needing_grad(tracer_);
  std::unordered_map<int, Tensor> grads;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    KILN_CHECK(r.defined(), "backward: tensor ", i, " is undefined");
    if (!r.impl()->is_traced())
      throw GraphBreak(
          "backward() inside a compiled function on both tensors it computed and tensors from "
          "outside it is not captured");
    const int id = tracer_.id_of(r);
    KILN_CHECK(id < static_cast<int>(needs.size()) && needs[id], "element ", i,
               " of tensors does not require grad and does not have a grad_fn");
    Tensor g = grad_roots.empty() ? Tensor() : grad_roots[i];
    if (!g.defined()) {
      KILN_CHECK(r.sym_numel() == 1,
                 "grad can be implicitly created only for scalar outputs (got a tensor of shape ",
                 r.sym_sizes(), "); pass a gradient argument");
      g = ones_like(r);
    }
    Tensor& seed = grads[id];
    seed = seed.defined() ? seed + g : g;
  }
  trace_gradients(tracer_, needs, nodes, grads);
  // The nodes this backward ran through: a backward without retain_graph frees them.
  std::vector<char> used(nodes, 0);
  for (size_t i = 0; i < nodes; ++i) {
    const Node& n = tracer_.graph().nodes[i];
    used[i] = n.grad_enabled && n.op->differentiable() &&
              std::any_of(n.outputs.begin(), n.outputs.end(),
                          [&](int id) { return grads.count(id) > 0; });
    if (used[i] && i < freed_.size() && freed_[i])
      throw GraphBreak(
          "a second backward() through the same ops inside a compiled function, after one "
          "without retain_graph=true, is not captured (eager autograd decides whether it may "
          "reuse the freed graph)");
  }
  if (!keep_graph) {
    freed_.resize(nodes, 0);
    for (size_t i = 0; i < nodes; ++i) freed_[i] = freed_[i] || used[i];
  }
  ran_backward_ = true;

  auto gradient_of = [&](int id) {
    auto it = grads.find(id);
    return it == grads.end() ? Tensor() : it->second;
  };
  if (inputs) {  // autograd::grad: the gradients are returned, no .grad changes
    std::vector<Tensor> out;
    for (const Tensor& x : *inputs) {
      KILN_CHECK(x.defined() && x.requires_grad(),
                 "One of the differentiated Tensors does not require grad");
      out.push_back(gradient_of(tracer_.id_of(x)));
      KILN_CHECK(out.back().defined() || allow_unused,
                 "One of the differentiated Tensors appears to not have been used in the graph. "
                 "Set allow_unused=True if this is the desired behavior.");
    }
    return out;
  }
  const Graph& graph = tracer_.graph();
  for (int id : graph.inputs)
    if (id < static_cast<int>(needs.size()) && needs[id] && gradient_of(id).defined())
      throw GraphBreak(
          "backward() inside a compiled function computes the .grad of a tensor argument, "
          "which the capture does not replay");
  for (int id : graph.captured) {
    const Tensor g = gradient_of(id);
    if (!g.defined()) continue;
    const Tensor leaf = tracer_.tensor(id);
    if (!leaf.is_leaf())
      throw GraphBreak(
          "backward() inside a compiled function reaches a tensor computed outside it, whose "
          "gradient would flow on through autograd's graph");
    if (has_hooks(leaf))
      throw GraphBreak(
          "backward() inside a compiled function reaches a tensor with gradient hooks, which "
          "the capture does not run");
    accumulate(leaf, g);
  }
  return {};
}

void CapturedState::defer(const char* what, std::function<void()> effect) {
  deferred_.push_back(std::move(effect));
  tracer_.seal(what);
}

StateEffects CapturedState::finish() {
  tracer_.seal("");
  StateEffects fx;
  fx.ran_backward = ran_backward_;
  fx.deferred = std::move(deferred_);
  // A gradient the graph returns must be a tensor of its own, as AccumulateGrad's clone makes it:
  // not an input, a view, a broadcast or another .grad.
  std::unordered_set<int> taken;
  auto own = [&](const Tensor& g) {
    const int id = tracer_.id_of(g);
    const Value& v = tracer_.graph().values[id];
    const bool contiguous = is_contiguous(v.sizes, v.strides);
    const bool fresh = v.kind == Value::Kind::NodeOutput &&
                       !tracer_.graph().nodes[v.producer].op->is_view && contiguous &&
                       taken.insert(id).second;
    if (fresh) return g;
    return tracer_.run([&] {
      const NoGradGuard no_grad;
      return contiguous ? g.clone() : g.contiguous();
    });
  };
  for (const Slot& s : slots_) {
    if (s.read_first) fx.read.push_back({s.leaf, s.original});
    if (!s.written) continue;
    const Tensor& now = grad_field(s.leaf);
    if (now.defined() && !now.impl()->is_traced()) {
      if (now.impl() == s.original.impl()) continue;  // set back to what it was
      throw GraphBreak(
          "the function sets a .grad to a tensor it did not compute, which a graph does not "
          "replay");
    }
    fx.written.push_back({s.leaf, now.defined() ? own(now) : Tensor()});
  }
  restore();
  return fx;
}

}  // namespace kiln::compiler
