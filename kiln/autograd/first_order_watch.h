#pragma once
// Forward mode (kiln::func::jvp) differentiates backward passes. An op whose backward is not
// differentiable (OpDef::backward_differentiable is false: fused backward kernels) would give
// silent zeros there; while a watch lives, each such backward run with create_graph on this
// thread is noted, so that the transform can fail naming the op.
#include <string>
#include <vector>

namespace kiln::autograd {

class FirstOrderWatch {
 public:
  FirstOrderWatch();
  ~FirstOrderWatch();
  FirstOrderWatch(const FirstOrderWatch&) = delete;
  FirstOrderWatch& operator=(const FirstOrderWatch&) = delete;
  // The ops noted, first seen first, each once.
  const std::vector<std::string>& ops() const { return ops_; }

  // Called by OpNode when it runs such a backward with create_graph.
  static void note(const std::string& op);

 private:
  std::vector<std::string> ops_;
  FirstOrderWatch* outer_;
};

}  // namespace kiln::autograd
