#pragma once
// The backward engine: runs the graph from the roots in dependency order with a ready queue
// (no recursion, so deep graphs are fine), and kiln::autograd::grad.
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln::autograd {

class Node;
struct Edge;
using variable_list = std::vector<Tensor>;

// Accumulates d(sum(roots * grad_roots))/d(leaf) into every leaf's .grad.
void backward(const variable_list& roots, const variable_list& grad_roots = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);

// Returns d(outputs)/d(inputs) without touching .grad. With create_graph the result has a graph
// of its own, so it can be differentiated again.
variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const variable_list& grad_outputs = {},
                   std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                   bool allow_unused = false);

// Runs `callback` when the backward pass now running on this thread has finished (before
// backward() returns), as PyTorch's Variable._execution_engine.queue_callback. Callbacks run in
// the order queued, and may queue more. Outside a backward pass it is an error.
void queue_callback(std::function<void()> callback);

// Whether the backward pass now running on this thread keeps the graph (retain_graph or
// create_graph). A node whose backward is a long program (a compiled one) frees what the forward
// saved as it goes when it does not, as PyTorch's ctx.maybe_clear_saved_tensors. False outside
// a backward pass.
bool current_pass_keeps_graph();

// Runs `body` as a backward pass that does not use the engine (compiled autograd): queue_callback
// and current_pass_keeps_graph see it, and the callbacks queued run when body returns.
void run_as_pass(bool keep_graph, const std::function<void()>& body);

// The nodes a backward pass from these edges runs, in the engine's order: each after every node
// that feeds it a gradient, and among those ready, the one made last first (PyTorch's CPU ready
// queue).
std::vector<std::shared_ptr<Node>> execution_order(const std::vector<Edge>& roots);

// Takes whole backward() passes on this thread before the engine runs them (compiled autograd,
// kiln/compile/compiled_autograd.h), given the roots' gradient edges and their checked
// gradients; it returns false to leave a pass to the engine. Returns the one it replaces.
using BackwardInterceptor =
    std::function<bool(const std::vector<Edge>& roots, const variable_list& root_grads,
                       bool keep_graph, bool create_graph)>;
BackwardInterceptor set_backward_interceptor(BackwardInterceptor interceptor);

}  // namespace kiln::autograd
