#include "kiln/autograd/deferred_release.h"

#include "kiln/autograd/node.h"

namespace kiln::autograd {
namespace {
struct Pending {
  std::vector<std::shared_ptr<Node>> nodes;
  std::vector<Tensor> tensors;
  bool draining = false;
};
thread_local Pending t_pending;
}  // namespace

void defer_release(std::vector<std::shared_ptr<Node>> nodes, std::vector<Tensor> tensors) {
  Pending& p = t_pending;
  for (auto& n : nodes)
    if (n) p.nodes.push_back(std::move(n));
  for (auto& t : tensors)
    if (t.defined()) p.tensors.push_back(std::move(t));
  if (p.draining) return;
  p.draining = true;
  while (!p.nodes.empty() || !p.tensors.empty()) {
    if (!p.tensors.empty()) {
      Tensor t = std::move(p.tensors.back());
      p.tensors.pop_back();
    } else {
      std::shared_ptr<Node> n = std::move(p.nodes.back());
      p.nodes.pop_back();
    }
  }
  p.draining = false;
}

}  // namespace kiln::autograd
