#pragma once
// The autograd state a tensor carries. Core only stores it; kiln/autograd gives it meaning.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln {

namespace autograd {
class Node;
}

struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  bool is_view = false;  // produced by a view op while recording: in-place changes are refused
  Tensor grad;
  std::shared_ptr<autograd::Node> grad_fn;         // null for leaves
  uint32_t output_nr = 0;                          // which output of grad_fn this tensor is
  std::weak_ptr<autograd::Node> grad_accumulator;  // leaves: the node that writes .grad
  std::vector<std::function<Tensor(const Tensor&)>> hooks;  // run on this tensor's gradient
  // Leaves: run with the tensor after its .grad has been accumulated.
  std::vector<std::function<void(const Tensor&)>> post_accumulate_grad_hooks;
};

// A node's name ("AddBackward0") for printing grad_fn: core cannot call autograd::Node, so
// kiln/autograd installs the function that asks it.
using NodeNameFn = std::string (*)(const autograd::Node&);
void set_node_name_fn(NodeNameFn fn);
std::string node_name(const autograd::Node& node);

}  // namespace kiln
