#include "kiln/autograd/engine.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "kiln/autograd/anomaly_mode.h"
#include "kiln/autograd/grad_mode.h"
#include "kiln/autograd/node.h"
#include "kiln/core/autograd_meta.h"
#include "kiln/core/error.h"
#include "kiln/core/graph_break.h"
#include "kiln/ops/ops.h"

namespace kiln::autograd {
namespace {

// Where autograd::grad wants a gradient delivered instead of flowing on.
struct Capture {
  Node* node;
  uint32_t input_nr;
  size_t index;
};

struct ReadyOrder {  // later nodes first, as PyTorch's CPU ready queue
  bool operator()(const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) const {
    return a->sequence_nr() < b->sequence_nr();
  }
};

// Each backward pass running on this thread, innermost last: whether it keeps the graph, and
// the callbacks queued for its end.
class PassFrame;
thread_local std::vector<PassFrame*> passes;

// Pushes a pass's frame for its lifetime.
class PassFrame {
 public:
  explicit PassFrame(bool keep_graph) : keep_graph_(keep_graph) { passes.push_back(this); }
  ~PassFrame() { passes.pop_back(); }
  PassFrame(const PassFrame&) = delete;
  PassFrame& operator=(const PassFrame&) = delete;
  void queue(std::function<void()> callback) { callbacks_.push_back(std::move(callback)); }
  void run_callbacks() {
    for (size_t i = 0; i < callbacks_.size(); ++i) {
      auto callback = std::move(callbacks_[i]);  // moved out: the callback may queue more
      callback();
    }
    callbacks_.clear();
  }
  bool keep_graph() const { return keep_graph_; }

 private:
  bool keep_graph_;
  std::vector<std::function<void()>> callbacks_;
};

thread_local BackwardInterceptor interceptor;

void accumulate(Tensor& slot, const Tensor& g) { slot = slot.defined() ? add(slot, g) : g; }

// n->apply(grads), under anomaly mode with the node named in errors and its outputs checked.
variable_list apply_node(Node* n, variable_list grads) {
  if (!AnomalyMode::is_enabled()) return n->apply(std::move(grads));
  variable_list out;
  try {
    out = n->apply(std::move(grads));
  } catch (...) {
    std::cerr << "[W] Warning: Error detected in " << n->name()
              << " (anomaly mode: the error below was raised by this node's backward)\n";
    throw;
  }
  if (AnomalyMode::should_check_nan()) {
    NoGradGuard no_grad;
    for (size_t i = 0; i < out.size(); ++i) {
      const Tensor& g = out[i];
      if (!g.defined() || !is_floating_point(g.dtype())) continue;
      KILN_CHECK(!isnan(g).any().item<bool>(), "Function '", n->name(),
                 "' returned nan values in its ", i, "th output.");
    }
  }
  return out;
}

variable_list run(const variable_list& roots, const variable_list& grad_roots, bool keep_graph,
                  bool create_graph, const variable_list* inputs, bool allow_unused) {
  KILN_CHECK(grad_roots.empty() || grad_roots.size() == roots.size(), "backward: got ",
             grad_roots.size(), " gradients for ", roots.size(), " tensors");
  // Autograd does not record inside a capture, so traced roots have no graph to run here: the
  // capture traces their backward formulas as ops.
  if (std::any_of(roots.begin(), roots.end(),
                  [](const Tensor& r) { return r.defined() && r.impl()->is_traced(); })) {
    if (compiler::CaptureContext* c = compiler::capture_context())
      return c->backward(roots, grad_roots, inputs, keep_graph, create_graph, allow_unused);
    throw compiler::GraphBreak(
        "backward() on a traced tensor outside a compiled function's capture is not captured; "
        "the function runs eagerly");
  }
  std::unordered_map<Node*, variable_list> buffers;
  std::vector<Edge> root_edges;
  variable_list root_values;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    KILN_CHECK(r.defined(), "backward: tensor ", i, " is undefined");
    Edge e = gradient_edge(r);
    KILN_CHECK(e.valid(), "element ", i,
               " of tensors does not require grad and does not have a grad_fn");
    Tensor g = grad_roots.empty() ? Tensor() : grad_roots[i];
    if (!g.defined()) {
      KILN_CHECK(r.sym_numel() == 1,
                 "grad can be implicitly created only for scalar outputs (got a "
                 "tensor of shape ",
                 r.sym_sizes(), "); pass a gradient argument");
      g = ones_like(r);
    } else {
      KILN_CHECK(g.sym_sizes() == r.sym_sizes(), "backward: gradient of shape ", g.sym_sizes(),
                 " does not match the tensor's shape ", r.sym_sizes());
    }
    root_edges.push_back(e);
    root_values.push_back(g);
  }

  std::vector<Capture> captures;
  variable_list captured;
  if (inputs) {
    captured.resize(inputs->size());
    for (size_t i = 0; i < inputs->size(); ++i) {
      const Tensor& t = (*inputs)[i];
      KILN_CHECK(t.defined() && t.requires_grad(), "autograd::grad: input ", i,
                 " does not require grad");
      Edge e = gradient_edge(t);
      captures.push_back({e.node.get(), e.input_nr, i});
    }
  }

  if (!inputs && interceptor && interceptor(root_edges, root_values, keep_graph, create_graph))
    return {};
  const std::vector<std::shared_ptr<Node>> order = execution_order(root_edges);

  AutoGradMode mode(create_graph);
  PassFrame frame(keep_graph);
  for (size_t i = 0; i < root_edges.size(); ++i) {
    const Edge& e = root_edges[i];
    auto& buf = buffers[e.node.get()];
    buf.resize(e.node->num_outputs());
    accumulate(buf[e.input_nr], root_values[i]);
  }

  for (const std::shared_ptr<Node>& node : order) {
    Node* n = node.get();
    variable_list grads = std::move(buffers[n]);
    buffers.erase(n);
    grads.resize(n->num_outputs());
    n->run_pre_hooks(grads);
    bool is_leaf_sink = dynamic_cast<AccumulateGrad*>(n) != nullptr;
    for (const Capture& c : captures)
      if (c.node == n && c.input_nr < grads.size() && grads[c.input_nr].defined())
        accumulate(captured[c.index], grads[c.input_nr]);
    variable_list out;
    if (!(inputs && is_leaf_sink)) {
      bool any = false;
      for (const auto& g : grads) any = any || g.defined();
      if (any) out = apply_node(n, std::move(grads));
      if (!keep_graph) n->release_variables();
    }
    const auto& edges = n->next_functions();
    for (size_t i = 0; i < edges.size() && i < out.size(); ++i) {
      const Edge& e = edges[i];
      if (!e.valid() || !out[i].defined()) continue;
      auto& buf = buffers[e.node.get()];
      buf.resize(e.node->num_outputs());
      accumulate(buf[e.input_nr], out[i]);
    }
  }

  frame.run_callbacks();

  if (inputs && !allow_unused) {
    for (size_t i = 0; i < captured.size(); ++i)
      KILN_CHECK(captured[i].defined(), "autograd::grad: input ", i,
                 " was not used in the graph; pass allow_unused=true if this is intended");
  }
  return captured;
}

}  // namespace

std::vector<std::shared_ptr<Node>> execution_order(const std::vector<Edge>& roots) {
  // Dependencies: how many edges point at each node reachable from the roots.
  std::unordered_map<Node*, int> deps;
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  for (const Edge& e : roots)
    if (e.valid() && seen.insert(e.node.get()).second) stack.push_back(e.node.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_functions()) {
      if (!e.valid()) continue;
      ++deps[e.node.get()];
      if (seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
  }
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, ReadyOrder> ready;
  for (const Edge& e : roots) {
    if (!e.valid() || deps[e.node.get()] != 0) continue;
    deps[e.node.get()] = -1;  // queued
    ready.push(e.node);
  }
  std::vector<std::shared_ptr<Node>> order;
  while (!ready.empty()) {
    order.push_back(ready.top());
    ready.pop();
    // Ready even when no gradient will reach it: its own edges must still count down.
    for (const Edge& e : order.back()->next_functions())
      if (e.valid() && --deps[e.node.get()] == 0) ready.push(e.node);
  }
  return order;
}

BackwardInterceptor set_backward_interceptor(BackwardInterceptor next) {
  std::swap(interceptor, next);
  return next;
}

void queue_callback(std::function<void()> callback) {
  KILN_CHECK(!passes.empty(),
             "queue_callback: no backward pass is running on this thread; callbacks can only be "
             "queued from within backward (a hook or a Node)");
  passes.back()->queue(std::move(callback));
}

void backward(const variable_list& roots, const variable_list& grad_roots,
              std::optional<bool> retain_graph, bool create_graph) {
  run(roots, grad_roots, retain_graph.value_or(create_graph), create_graph, nullptr, false);
}

variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const variable_list& grad_outputs, std::optional<bool> retain_graph,
                   bool create_graph, bool allow_unused) {
  return run(outputs, grad_outputs, retain_graph.value_or(create_graph), create_graph, &inputs,
             allow_unused);
}

void run_as_pass(bool keep_graph, const std::function<void()>& body) {
  PassFrame frame(keep_graph);
  body();
  frame.run_callbacks();
}

bool current_pass_keeps_graph() { return !passes.empty() && passes.back()->keep_graph(); }

}  // namespace kiln::autograd
