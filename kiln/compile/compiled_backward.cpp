#include "kiln/compile/compiled_backward.h"

#include <ostream>
#include <utility>

#include "kiln/autograd/engine.h"
#include "kiln/compile/logs.h"
#include "kiln/core/error.h"

namespace kiln::compiler {

void CompiledBackward::set_eager_call(EagerCall call, const std::vector<Tensor>& inputs) {
  eager_call_ = std::move(call);
  inputs_.clear();
  for (const Tensor& t : inputs) inputs_.emplace_back(t, /*is_output=*/false);
}

void CompiledBackward::release_variables() {
  CustomNodeBase::release_variables();
  eager_call_ = nullptr;
  for (autograd::SavedTensor& s : inputs_) s.reset();
}

std::vector<Tensor> CompiledBackward::apply(std::vector<Tensor>&& grads) {
  if (GradMode::is_enabled()) return apply_eagerly(std::move(grads));
  std::vector<Tensor> saved = ctx.get_saved_variables();
  if (!autograd::current_pass_keeps_graph()) release_variables();
  return run(std::move(grads), std::move(saved), backward_);
}

std::vector<Tensor> CompiledBackward::apply_eagerly(std::vector<Tensor>&& grads) {
  // Unpacking checks, as for any saved tensor, that the graph was not freed and that no input
  // was changed in place since the call, which the rerun would read.
  std::vector<Tensor> inputs;
  for (const autograd::SavedTensor& s : inputs_)
    inputs.push_back(s.unpack(nullptr, "CompiledFunctionBackward"));
  log(LogKind::Perf, function_ +
                         ": backward with create_graph=true runs the call again eagerly, whose "
                         "autograd graph records the gradients' own");
  const std::vector<Tensor> results = eager_call_();
  const autograd::variable_list g = prepare_grads(std::move(grads));
  std::vector<Tensor> outputs, output_grads, wrt;
  for (int k : differentiable_results_)
    if (g.at(k).defined() && results.at(k).requires_grad()) {
      outputs.push_back(results[k]);
      output_grads.push_back(g[k]);
    }
  for (int t : targets_) wrt.push_back(inputs.at(t));
  autograd::variable_list result(next_edges_.size());
  if (!outputs.empty()) {
    const std::vector<Tensor> computed =
        autograd::grad(outputs, wrt, output_grads, /*retain_graph=*/true, /*create_graph=*/true,
                       /*allow_unused=*/true);
    for (size_t j = 0; j < targets_.size(); ++j) result.at(targets_[j]) = computed[j];
  }
  if (!autograd::current_pass_keeps_graph()) release_variables();
  return map_result(std::move(result));
}

bool CompiledBackward::describe_for_trace(std::vector<Tensor>& saved, std::ostream& key) {
  key << "compiled " << graph_key_ << " results";
  for (int k : differentiable_results_) key << " " << k;
  for (const SymShape& s : output_sizes_) key << " " << s;
  const std::vector<Tensor> values = ctx.get_saved_variables();
  saved.insert(saved.end(), values.begin(), values.end());
  return true;
}

std::vector<Tensor> CompiledBackward::apply_traced(std::vector<Tensor>&& grads,
                                                   const std::vector<Tensor>& saved) {
  return run(std::move(grads), saved, traced_);
}

std::vector<Tensor> CompiledBackward::run(std::vector<Tensor> grads, std::vector<Tensor> saved,
                                          const BackwardFn& backward) const {
  autograd::variable_list g = prepare_grads(std::move(grads));
  for (int k : differentiable_results_)
    saved.push_back(std::exchange(g.at(k), Tensor()).contiguous());
  const std::vector<Tensor> computed = backward(std::move(saved));
  autograd::variable_list result(next_edges_.size());
  for (size_t j = 0; j < targets_.size(); ++j) result.at(targets_[j]) = computed.at(j);
  return map_result(std::move(result));
}

}  // namespace kiln::compiler
