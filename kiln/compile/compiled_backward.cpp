#include "kiln/compile/compiled_backward.h"

#include <utility>

#include "kiln/autograd/engine.h"
#include "kiln/core/error.h"

namespace kiln::compiler {

std::vector<Tensor> CompiledBackward::apply(std::vector<Tensor>&& grads) {
  KILN_CHECK(!GradMode::is_enabled(), function_,
             ": backward with create_graph=true through a compiled function is not supported: "
             "its backward is compiled code, which records no graph of its own. Compile with "
             ".backend(\"eager\") to take higher-order gradients through it");
  autograd::variable_list g = prepare_grads(std::move(grads));
  std::vector<Tensor> in = ctx.get_saved_variables();
  if (!autograd::current_pass_keeps_graph()) release_variables();
  for (int k : differentiable_results_) in.push_back(std::exchange(g.at(k), Tensor()).contiguous());
  const std::vector<Tensor> computed = backward_(std::move(in));
  autograd::variable_list result(next_edges_.size());
  for (size_t j = 0; j < targets_.size(); ++j) result.at(targets_[j]) = computed.at(j);
  return map_result(std::move(result));
}

}  // namespace kiln::compiler
