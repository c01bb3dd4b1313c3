#pragma once
// The autograd node of a compiled training graph's results: loss.backward() after a compiled
// forward runs the compiled backward graph, with the values the forward saved.
#include <functional>
#include <string>
#include <vector>

#include "kiln/autograd/function.h"
#include "kiln/autograd/saved_tensor.h"

namespace kiln::compiler {

class CompiledBackward final : public autograd::CustomNodeBase {
 public:
  // backward: (saved values..., one gradient per differentiable result...) -> one gradient per
  // target; targets: the position of each among the inputs the node is finished with. It gets
  // the only references to the saved values when the backward pass does not keep the graph, so
  // it can free them as it goes.
  // traced: the same backward on the eager kernels, which compiled autograd traces; graph_key
  // names that backward graph (and its symbols' values) uniquely in this process.
  using BackwardFn = std::function<std::vector<Tensor>(std::vector<Tensor>)>;
  CompiledBackward(std::string function, BackwardFn backward, BackwardFn traced,
                   std::string graph_key, std::vector<int> differentiable_results,
                   std::vector<int> targets)
      : function_(std::move(function)),
        backward_(std::move(backward)),
        traced_(std::move(traced)),
        graph_key_(std::move(graph_key)),
        differentiable_results_(std::move(differentiable_results)),
        targets_(std::move(targets)) {}

  // For create_graph=true: the call again on the eager kernels, and the node's inputs (the
  // arguments, then the captured tensors), held until the graph is freed.
  using EagerCall = std::function<std::vector<Tensor>()>;
  void set_eager_call(EagerCall call, const std::vector<Tensor>& inputs);

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  void release_variables() override;
  std::string name() const override { return "CompiledFunctionBackward"; }
  bool describe_for_trace(std::vector<Tensor>& saved, std::ostream& key) override;
  std::vector<Tensor> apply_traced(std::vector<Tensor>&& grads,
                                   const std::vector<Tensor>& saved) override;

 private:
  // Runs `backward` on the saved values and the gradients, mapping its results to the inputs.
  std::vector<Tensor> run(std::vector<Tensor> grads, std::vector<Tensor> saved,
                          const BackwardFn& backward) const;
  // create_graph=true: the compiled backward records no graph, so the call runs again eagerly
  // and the gradients come from its autograd graph, recording their own.
  std::vector<Tensor> apply_eagerly(std::vector<Tensor>&& grads);

  std::string function_;
  BackwardFn backward_, traced_;
  std::string graph_key_;
  std::vector<int> differentiable_results_, targets_;
  EagerCall eager_call_;
  std::vector<autograd::SavedTensor> inputs_;
};

}  // namespace kiln::compiler
