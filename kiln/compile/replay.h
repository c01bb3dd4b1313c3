#pragma once
// The "eager" backend: runs a captured graph op by op through the dispatcher, on the eager
// kernels, with the symbolic sizes in attributes evaluated for this call.
#include <span>
#include <vector>

#include "kiln/compile/graph.h"

namespace kiln::compiler {

std::vector<Tensor> replay(const Graph& graph, const std::vector<Tensor>& inputs,
                           std::span<const int64_t> symbols);

}  // namespace kiln::compiler
