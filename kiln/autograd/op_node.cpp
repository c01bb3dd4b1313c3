#include "kiln/autograd/op_node.h"

#include <ostream>

#include "kiln/autograd/deferred_release.h"
#include "kiln/autograd/first_order_watch.h"
#include "kiln/autograd/grad_mode.h"
#include "kiln/autograd/node_name.h"
#include "kiln/core/autograd_meta.h"
#include "kiln/core/dispatch.h"
#include "kiln/ops/ops.h"

namespace kiln::autograd {

OpNode::~OpNode() {
  std::vector<Tensor> held;
  for (auto& s : saved_inputs_) held.push_back(std::move(s.raw()));
  for (auto& s : saved_outputs_) held.push_back(std::move(s.raw()));
  defer_release({}, std::move(held));
}

std::string OpNode::name() const { return backward_node_name(op_, overload_); }

void OpNode::release_variables() {
  for (auto& s : saved_inputs_) s.reset();
  for (auto& s : saved_outputs_) s.reset();
  released_ = true;
}

namespace {
// True when `sizes` broadcasts to `target` (so a gradient of shape target sums down to sizes).
bool expandable_to(const SymShape& sizes, SymIntArrayRef target) {
  if (sizes.size() > target.size()) return false;
  const size_t lead = target.size() - sizes.size();
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] != 1 && sizes[d] != target[lead + d]) return false;
  return true;
}
}  // namespace

Tensor reduce_grad_to(const Tensor& grad, const InputMeta& input, const std::string& who,
                      size_t index) {
  // A 0-dim CPU input may join tensors on any device (a scalar argument); its gradient, computed
  // there, comes back to the CPU, as PyTorch's engine does.
  const bool cpu_scalar = input.device.is_cpu() && input.sizes.empty();
  KILN_CHECK(grad.device() == input.device || cpu_scalar, "Function ", who,
             " returned an invalid gradient at index ", index, " - expected device ", input.device,
             " but got ", grad.device());
  Tensor g = grad;
  if (!(g.sym_sizes() == SymIntArrayRef(input.sizes))) {
    KILN_CHECK(expandable_to(input.sizes, g.sym_sizes()), "Function ", who,
               " returned an invalid gradient at index ", index, " - got ", g.sym_sizes(),
               " but expected shape compatible with ", SymIntArrayRef(input.sizes));
    g = sum_to_size(g, input.sizes);
  }
  if (g.dtype() != input.dtype) g = g.to(input.dtype);
  if (g.device() != input.device) g = g.to(input.device);
  return g;
}

std::vector<Tensor> OpNode::apply(std::vector<Tensor>&& grads) {
  std::shared_ptr<Node> self = shared_from_this();
  const std::string who = name();
  std::vector<Tensor> inputs, outputs;
  for (const auto& s : saved_inputs_) inputs.push_back(s.unpack(self, who.c_str()));
  for (const auto& s : saved_outputs_) outputs.push_back(s.unpack(self, who.c_str()));
  return apply_to(std::move(grads), inputs, outputs);
}

bool OpNode::describe_for_trace(std::vector<Tensor>& saved, std::ostream& key) {
  std::shared_ptr<Node> self = shared_from_this();
  const std::string who = name();
  key << op_.name << "#" << who << "(" << attrs_.to_string() << ")";
  for (bool b : needs_input_grad_) key << b;
  for (const InputMeta& m : input_meta_) key << " in" << m.dtype << m.device << m.sizes;
  for (size_t o = 0; o < output_sizes_.size(); ++o)
    key << " out" << output_options_[o].dtype() << output_sizes_[o];
  key << " saves " << saved_inputs_.size() << "+" << saved_outputs_.size();
  for (const auto* list : {&saved_inputs_, &saved_outputs_})
    for (const SavedTensor& s : *list)
      saved.push_back(s.defined() ? s.unpack(self, who.c_str()) : Tensor());
  return true;
}

std::vector<Tensor> OpNode::apply_traced(std::vector<Tensor>&& grads,
                                         const std::vector<Tensor>& saved) {
  const auto split = saved.begin() + static_cast<std::ptrdiff_t>(saved_inputs_.size());
  return apply_to(std::move(grads), std::vector<Tensor>(saved.begin(), split),
                  std::vector<Tensor>(split, saved.end()));
}

std::vector<Tensor> OpNode::apply_to(std::vector<Tensor> grads, const std::vector<Tensor>& inputs,
                                     const std::vector<Tensor>& outputs) const {
  const std::string who = name();
  // Outputs that received no gradient contribute zeros (multi-output ops).
  for (size_t i = 0; op_.materializes_grads && i < grads.size(); ++i) {
    if (!grads[i].defined() && i < output_options_.size() &&
        is_floating_point(output_options_[i].dtype()))
      grads[i] = zeros(SymIntList(output_sizes_[i]), output_options_[i]);
  }
  if (!op_.backward_differentiable && GradMode::is_enabled()) FirstOrderWatch::note(op_.name);
  BackwardContext ctx{grads, inputs, outputs, attrs_, needs_input_grad_};
  std::vector<Tensor> result = op_.backward_(ctx);
  result.resize(next_edges_.size());
  for (size_t i = 0; i < result.size(); ++i) {
    if (!needs_input_grad_[i]) {
      result[i] = Tensor();
      continue;
    }
    if (result[i].defined()) result[i] = reduce_grad_to(result[i], input_meta_[i], who, i);
  }
  return result;
}

namespace {

bool requires_grad(const Tensor& t) { return t.defined() && t.requires_grad(); }

std::vector<Tensor> autograd_dispatch(const OpDef& op, const std::vector<Tensor>& inputs,
                                      const Attrs& attrs, const ComputeFn* compute) {
  if (op.is_inplace) {
    const Tensor& self = inputs.at(0);
    AutogradMeta* m = self.impl()->autograd_meta();
    KILN_CHECK(!(m && m->requires_grad && !m->grad_fn), op.name,
               ": a leaf Variable that requires grad is being used in an in-place operation.");
    KILN_CHECK(!(m && m->is_view && m->requires_grad), op.name,
               ": in-place operations on a view of a tensor that requires grad are not "
               "supported; apply the operation to the base tensor or clone() the view first.");
  }
  if (!op.differentiable()) {
    KILN_CHECK(!op.is_inplace || !requires_grad(inputs.at(0)), op.name,
               ": the op is not differentiable, so it cannot modify a tensor that requires grad");
    if (compute) return (*compute)();
    NoGradGuard no_grad;
    return run_kernel(op, inputs, attrs);
  }

  auto node = std::make_shared<OpNode>(op, attrs);
  node->set_overload(backward_overload(op, inputs, attrs));
  auto& edges = node->mutable_next_edges();
  edges.reserve(inputs.size());
  for (const auto& t : inputs) {
    edges.push_back(requires_grad(t) ? gradient_edge(t) : Edge{});
    node->needs_input_grad().push_back(requires_grad(t));
    node->input_metadata().push_back(InputMeta::of(t));
  }
  if (op.saved_inputs != 0) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      // An in-place op overwrites input 0: keep a copy of what it was.
      const Tensor& t = inputs[i];
      if (!op.saves_input(i)) {
        node->saved_inputs().emplace_back();
      } else if (op.saves_input_metadata(i) && t.defined()) {
        const TensorImpl& i = *t.impl();
        Tensor shape_only(std::make_shared<TensorImpl>(StorageImpl::meta(i.device()), i.dtype(),
                                                       i.sym_sizes(), i.sym_strides(),
                                                       i.sym_storage_offset()));
        node->saved_inputs().emplace_back(shape_only, false);
      } else if (op.is_inplace && i == 0 && t.defined()) {
        NoGradGuard no_grad;
        node->saved_inputs().emplace_back(t.clone(), false);
      } else {
        node->saved_inputs().emplace_back(t, false);
      }
    }
  }

  std::vector<Tensor> outs;
  if (compute) {
    outs = (*compute)();
  } else {
    NoGradGuard no_grad;
    outs = run_kernel(op, inputs, attrs);
  }
  node->set_num_outputs(outs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    Tensor& o = outs[i];
    node->output_options().push_back(TensorOptions(o.dtype()).device(o.device()));
    node->output_sizes().push_back(o.sym_sizes());
    if (!is_floating_point(o.dtype())) continue;  // indices, masks: no gradient
    AutogradMeta& m = o.impl()->ensure_autograd_meta();
    m.requires_grad = true;
    m.grad_fn = node;
    m.output_nr = static_cast<uint32_t>(i);
    if (op.is_view) m.is_view = true;
  }
  if (op.saved_outputs != 0)
    for (size_t i = 0; i < outs.size(); ++i)
      node->saved_outputs().emplace_back(op.saves_output(i) ? outs[i] : Tensor(), true);
  return outs;
}

struct InstallHook {
  InstallHook() {
    set_autograd_hook(&autograd_dispatch);
    set_node_name_fn([](const Node& node) { return node.name(); });
  }
} install_hook;

}  // namespace
}  // namespace kiln::autograd
