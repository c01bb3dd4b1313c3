#pragma once
// The "eager" backend: runs a captured graph op by op through the dispatcher, on the eager
// kernels, with the symbolic sizes in attributes evaluated for this call.
#include <functional>
#include <span>
#include <vector>

#include "kiln/compile/graph.h"

namespace kiln::compiler {

// The attributes with every size (SymInt, and each element of a SymShape) replaced by f(size).
Attrs map_sizes(const Attrs& attrs, const std::function<SymInt(const SymInt&)>& f);
// The attributes with their symbolic sizes evaluated for this call.
Attrs concrete_attrs(const Attrs& attrs, std::span<const int64_t> symbols);
// The values of a call: graph inputs and captured tensors (this call's, in the order of
// graph.captured_tensors) bound, the rest undefined.
std::vector<Tensor> bind_inputs(const Graph& graph, const std::vector<Tensor>& inputs,
                                const std::vector<Tensor>& captured);
// Runs node n on the eager kernels, storing its outputs in `values` (args: scratch).
void run_node(const Graph& graph, const Node& n, std::vector<Tensor>& values,
              std::span<const int64_t> symbols, std::vector<Tensor>& args);
// The same with these attributes in place of the node's.
void run_node(const Graph& graph, const Node& n, std::vector<Tensor>& values, const Attrs& attrs,
              std::vector<Tensor>& args);
std::vector<Tensor> graph_outputs(const Graph& graph, const std::vector<Tensor>& values);

std::vector<Tensor> replay(const Graph& graph, const std::vector<Tensor>& inputs,
                           const std::vector<Tensor>& captured, std::span<const int64_t> symbols);

}  // namespace kiln::compiler
