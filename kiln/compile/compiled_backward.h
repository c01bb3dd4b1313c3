#pragma once
// The autograd node of a compiled training graph's results: loss.backward() after a compiled
// forward runs the compiled backward graph, with the values the forward saved.
#include <functional>
#include <string>
#include <vector>

#include "kiln/autograd/function.h"

namespace kiln::compiler {

class CompiledBackward final : public autograd::CustomNodeBase {
 public:
  // backward: (saved values..., one gradient per differentiable result...) -> one gradient per
  // target; targets: the position of each among the inputs the node is finished with. It gets
  // the only references to the saved values when the backward pass does not keep the graph, so
  // it can free them as it goes.
  using BackwardFn = std::function<std::vector<Tensor>(std::vector<Tensor>)>;
  CompiledBackward(std::string function, BackwardFn backward,
                   std::vector<int> differentiable_results, std::vector<int> targets)
      : function_(std::move(function)),
        backward_(std::move(backward)),
        differentiable_results_(std::move(differentiable_results)),
        targets_(std::move(targets)) {}

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return "CompiledFunctionBackward"; }

 private:
  std::string function_;
  BackwardFn backward_;
  std::vector<int> differentiable_results_, targets_;
};

}  // namespace kiln::compiler
