#pragma once
// Training graphs, as PyTorch's AOTAutograd makes them: the forward is traced together with the
// backward formulas of its ops (they are Kiln ops too) into one joint graph, which is then split
// into a forward graph that also returns what the backward saves, and a backward graph that
// recomputes the rest of what it reads (partition.h).
#include <unordered_map>
#include <vector>

#include "kiln/compile/graph.h"
#include "kiln/compile/tracer.h"

namespace kiln::compiler {

struct TrainingGraphs {
  // Inputs and captured tensors as the function's graph; outputs: the function's results, then
  // the saved values.
  Graph forward;
  // Inputs: the saved values, then one gradient per differentiable result; outputs: one
  // gradient per entry of grad_targets, -1 where none flows (the eager gradient is undefined).
  Graph backward;
  size_t results = 0;                       // the function's results among forward's outputs
  std::vector<int> differentiable_results;  // the results that take a gradient, in order
  // Which tensors get a gradient: positions in (the graph's inputs..., its captured tensors...).
  std::vector<int> grad_targets;
  // What the saved values other than captured tensors keep alive, at the symbols' hints.
  int64_t saved_bytes = 0;
  int recomputed_ops = 0;  // forward ops the backward runs again instead of saving results
};

// Continues a capture whose forward has run, giving `results`: traces the backward formulas
// (under the tracer's mode), finishes the joint graph and splits it. Throws GraphBreak where a
// training graph cannot be made (an in-place op on a gradient's path).
TrainingGraphs trace_training(Tracer& tracer, const std::vector<Tensor>& results);

// Which values of the graph traced so far need a gradient: the inputs and captured tensors that
// require grad, and what differentiable ops computed from them with grad mode on.
std::vector<char> values_needing_grad(Tracer& tracer);
// Traces, under the tracer's mode, the backward formulas of the first `nodes` nodes in reverse,
// from the gradients in `grads` (by value id) to every value in needs_grad that they reach,
// adding each one's gradient to `grads`.
void trace_gradients(Tracer& tracer, const std::vector<char>& needs_grad, size_t nodes,
                     std::unordered_map<int, Tensor>& grads);

}  // namespace kiln::compiler
