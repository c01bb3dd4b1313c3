#include "kiln/autograd/function.h"

#include "kiln/autograd/op_node.h"
#include "kiln/core/autograd_meta.h"
#include "kiln/ops/ops.h"

namespace kiln::autograd {

variable_list AutogradContext::get_saved_variables() const {
  auto node = node_.lock();
  variable_list out;
  for (const auto& s : saved_) out.push_back(s.unpack(node, "a custom autograd Function"));
  return out;
}

void AutogradContext::mark_dirty(const variable_list& inputs) {
  for (const auto& t : inputs) dirty_.insert(t.impl());
}

void AutogradContext::mark_non_differentiable(const variable_list& outputs) {
  for (const auto& t : outputs) non_differentiable_.insert(t.impl());
}

void CustomNodeBase::finish(const variable_list& inputs, variable_list& outputs, size_t num_args,
                            std::vector<int> tensor_arg_positions) {
  num_args_ = num_args;
  tensor_positions_ = std::move(tensor_arg_positions);
  std::shared_ptr<Node> self = shared_from_this();
  ctx.node_ = self;
  bool record = false;
  for (const auto& t : inputs) {
    bool rg = t.defined() && t.requires_grad();
    ctx.needs_input_grad_.push_back(rg);
    record = record || rg;
  }
  record = record && GradMode::is_enabled();
  for (auto& o : outputs) {
    bool is_input = false;
    for (const auto& t : inputs) is_input = is_input || (t.defined() && t.is_same(o));
    if (is_input && !ctx.dirty_.count(o.impl())) o = o.detach();  // alias, keeps input history
  }
  if (record) {
    for (const auto& t : inputs) {
      next_edges_.push_back(t.defined() && t.requires_grad() ? gradient_edge(t) : Edge{});
      input_meta_.push_back(InputMeta::of(t));
    }
    set_num_outputs(outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      Tensor& o = outputs[i];
      output_sizes_.push_back(o.sym_sizes());
      output_dtypes_.push_back(o.dtype());
      if (ctx.non_differentiable_.count(o.impl()) || !o.is_floating_point()) continue;
      AutogradMeta& m = o.impl()->ensure_autograd_meta();
      m.requires_grad = true;
      m.grad_fn = self;
      m.output_nr = static_cast<uint32_t>(i);
    }
  }
  for (const auto& t : ctx.to_save_) {
    bool is_output = false;
    for (const auto& o : outputs) is_output = is_output || (t.defined() && o.is_same(t));
    ctx.saved_.emplace_back(t, is_output && record);
  }
  ctx.to_save_.clear();
}

void CustomNodeBase::release_variables() {
  for (auto& s : ctx.saved_) s.reset();
}

variable_list CustomNodeBase::prepare_grads(variable_list&& grads) {
  if (ctx.materialize_grads_) {
    for (size_t i = 0; i < grads.size(); ++i)
      if (!grads[i].defined())
        grads[i] = zeros(SymIntList(output_sizes_[i]), TensorOptions(output_dtypes_[i]));
  }
  return std::move(grads);
}

variable_list CustomNodeBase::map_result(variable_list&& result) const {
  const size_t n_tensors = next_edges_.size();
  variable_list out(n_tensors);
  if (result.size() == n_tensors) {
    out = std::move(result);
  } else {
    KILN_CHECK(result.size() == num_args_, "custom Function backward: returned ", result.size(),
               " gradients, expected ", num_args_, " (one per forward argument) or ", n_tensors,
               " (one per tensor argument)");
    for (size_t k = 0; k < tensor_positions_.size() && k < n_tensors; ++k)
      out[k] = result[tensor_positions_[k]];
  }
  for (size_t i = 0; i < n_tensors; ++i) {
    if (!out[i].defined() || !next_edges_[i].valid()) {
      out[i] = Tensor();
      continue;
    }
    out[i] = reduce_grad_to(out[i], input_meta_[i], "custom Function", i);
  }
  return out;
}

}  // namespace kiln::autograd
