#pragma once
// The backward engine: runs the graph from the roots in dependency order with a ready queue
// (no recursion, so deep graphs are fine), and kiln::autograd::grad.
#include <functional>
#include <optional>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln::autograd {

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

}  // namespace kiln::autograd
