#include "kiln/compile/compiled_backward.h"

#include <ostream>
#include <utility>

#include "kiln/autograd/engine.h"
#include "kiln/core/error.h"

namespace kiln::compiler {

std::vector<Tensor> CompiledBackward::apply(std::vector<Tensor>&& grads) {
  KILN_CHECK(!GradMode::is_enabled(), function_,
             ": backward with create_graph=true through a compiled function is not supported: "
             "its backward is compiled code, which records no graph of its own. Compile with "
             ".backend(\"eager\") to take higher-order gradients through it");
  std::vector<Tensor> saved = ctx.get_saved_variables();
  if (!autograd::current_pass_keeps_graph()) release_variables();
  return run(std::move(grads), std::move(saved), backward_);
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
