#pragma once
// Releases graph references iteratively. Destroying a 100,000-node chain by plain shared_ptr
// destruction would recurse once per node and overflow the stack; instead each dying node hands
// its references to a thread-local list that the outermost destruction drains in a loop.
#include <memory>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln::autograd {
class Node;
void defer_release(std::vector<std::shared_ptr<Node>> nodes, std::vector<Tensor> tensors);
}  // namespace kiln::autograd
