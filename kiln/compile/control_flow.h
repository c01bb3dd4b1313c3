#pragma once
// Data-dependent control flow that a captured graph keeps (torch.cond, torch.while_loop). Eager
// code runs the chosen branch or the loop directly; under export_program, where the predicate is
// a traced value, each branch or the loop's condition and body is captured as a subgraph of one
// "cond" or "while_loop" node, which the program runs with the values of each call. Under
// kiln::compile a traced predicate is a graph break (the function runs eagerly). The functions
// must not change their inputs in place. Tensors they read from outside (parameters, constants,
// values the enclosing code computed) become inputs of the node, as torch.export lifts them.
#include <functional>
#include <vector>

#include "kiln/compile/graph.h"

namespace kiln {

using BranchFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// true_fn(operands) if pred (a one-element bool tensor) holds, else false_fn(operands). Both
// must return as many tensors, with the same dtypes and sizes.
std::vector<Tensor> cond(const Tensor& pred, const BranchFn& true_fn, const BranchFn& false_fn,
                         const std::vector<Tensor>& operands);

// while cond_fn(carried) holds (a one-element bool tensor): carried = body_fn(carried); returns
// carried. body_fn returns as many tensors as it takes, with the same dtypes and sizes.
std::vector<Tensor> while_loop(const std::function<Tensor(const std::vector<Tensor>&)>& cond_fn,
                               const BranchFn& body_fn, const std::vector<Tensor>& carried);

namespace compiler {

// The ops of control-flow nodes: not in the registry (they have no kernel; replay runs them).
const OpDef& cond_op();
const OpDef& while_loop_op();
// cond_op() or while_loop_op() by name, else null.
const OpDef* control_flow_op(std::string_view name);
bool is_control_flow(const OpDef& op);

// Runs control-flow node n of `graph` on `values` (see replay.h), with the symbols' values.
void run_control_flow(const Graph& graph, const Node& n, std::vector<Tensor>& values,
                      std::span<const int64_t> symbols);

}  // namespace compiler

}  // namespace kiln
