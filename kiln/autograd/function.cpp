#include "kiln/autograd/function.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <ostream>

#include "kiln/autograd/op_node.h"
#include "kiln/core/autograd_meta.h"
#include "kiln/ops/ops.h"

namespace kiln::autograd {

variable_list AutogradContext::get_saved_variables() const {
  if (traced_saved_) return *traced_saved_;
  auto node = node_.lock();
  variable_list out;
  const std::string who = node ? node->name() : "a custom autograd Function";
  for (const auto& s : saved_) out.push_back(s.unpack(node, who.c_str()));
  return out;
}

void AutogradContext::mark_dirty(const variable_list& inputs) {
  for (const auto& t : inputs) dirty_.insert(t.impl());
}

void AutogradContext::mark_non_differentiable(const variable_list& outputs) {
  for (const auto& t : outputs) non_differentiable_.insert(t.impl());
}

void CustomNodeBase::finish(const variable_list& inputs, variable_list& outputs,
                            std::vector<bool> is_tensor_argument) {
  is_tensor_argument_ = std::move(is_tensor_argument);
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
      output_options_.push_back(TensorOptions(o.dtype()).device(o.device()));
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

std::string cpp_node_name(const std::type_info& function) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(function.name(), nullptr, nullptr, &status), std::free);
  return std::string("torch::autograd::CppNode<") +
         (status == 0 && demangled ? demangled.get() : function.name()) + ">";
}

void CustomNodeBase::release_variables() {
  for (auto& s : ctx.saved_) s.reset();
}

variable_list CustomNodeBase::prepare_grads(variable_list&& grads) const {
  if (ctx.materialize_grads_) {
    for (size_t i = 0; i < grads.size(); ++i)
      if (!grads[i].defined()) grads[i] = zeros(SymIntList(output_sizes_[i]), output_options_[i]);
  }
  return std::move(grads);
}

variable_list CustomNodeBase::map_result(variable_list&& result) const {
  const std::string who = name();
  const size_t num_arguments = is_tensor_argument_.size();
  if (result.size() > num_arguments && std::none_of(result.begin() + num_arguments, result.end(),
                                                    [](const Tensor& g) { return g.defined(); }))
    result.resize(num_arguments);
  KILN_CHECK(result.size() == num_arguments, who,
             ": backward returned an incorrect number of gradients (expected ", num_arguments,
             ", got ", result.size(),
             "): one per forward argument, each tensor of a tensor list counting as one, and "
             "any extra ones undefined");
  const size_t n_tensors = next_edges_.size();
  variable_list out;
  out.reserve(n_tensors);
  for (size_t i = 0; i < num_arguments; ++i) {
    if (is_tensor_argument_[i]) {
      out.push_back(std::move(result[i]));
      continue;
    }
    KILN_CHECK(!result[i].defined(), who, ": backward returned a defined gradient at position ",
               i + 1, " (of sizes ", result[i].sizes(), "), but forward argument ", i + 1,
               " is not a tensor; return an undefined Tensor()");
  }
  out.resize(n_tensors);
  for (size_t i = 0; i < n_tensors; ++i) {
    if (!out[i].defined() || !next_edges_[i].valid()) {
      out[i] = Tensor();
      continue;
    }
    out[i] = reduce_grad_to(out[i], input_meta_[i], who, i);
  }
  return out;
}

namespace {
// saved_data's entries in key order (an unordered_map's order is not stable).
std::vector<std::pair<std::string, const IValue*>> sorted_data(
    const std::unordered_map<std::string, IValue>& data) {
  std::vector<std::pair<std::string, const IValue*>> out;
  for (const auto& [k, v] : data) out.emplace_back(k, &v);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}
}  // namespace

bool CustomNodeBase::describe_for_trace(std::vector<Tensor>& saved, std::ostream& key) {
  key << name() << " materialize " << ctx.materialize_grads_ << " needs";
  for (bool b : ctx.needs_input_grad_) key << b;
  for (const SymShape& s : output_sizes_) key << " out" << s;
  const variable_list variables = ctx.get_saved_variables();
  key << " saves " << variables.size();
  saved.insert(saved.end(), variables.begin(), variables.end());
  for (const auto& [k, v] : sorted_data(ctx.saved_data)) {
    key << " " << k << "=";
    if (v->isTensor()) {
      key << "tensor";
      saved.push_back(v->toTensor());
    } else if (v->isDouble()) {
      key << std::hexfloat << v->toDouble() << std::defaultfloat;
    } else if (v->isInt()) {
      key << v->toInt();
    } else if (v->isBool()) {
      key << v->toBool();
    } else if (v->isString()) {
      key << v->toStringRef().size() << ":" << v->toStringRef();
    } else if (v->isIntList()) {
      key << IntArrayRef(v->toIntVector());
    } else {
      key << "none";
    }
  }
  return true;
}

CustomNodeBase::TracedSaved::TracedSaved(AutogradContext& ctx, const std::vector<Tensor>& saved)
    : ctx_(ctx) {
  const size_t n = ctx.saved_.size();
  variables_.assign(saved.begin(), saved.begin() + static_cast<std::ptrdiff_t>(n));
  ctx.traced_saved_ = &variables_;
  size_t next = n;
  for (const auto& [k, v] : sorted_data(ctx.saved_data))
    if (v->isTensor()) replaced_.emplace_back(k, IValue(saved.at(next++)));
  for (auto& [k, v] : replaced_) std::swap(ctx.saved_data.at(k), v);
}

CustomNodeBase::TracedSaved::~TracedSaved() {
  for (auto& [k, v] : replaced_) std::swap(ctx_.saved_data.at(k), v);
  ctx_.traced_saved_ = nullptr;
}

}  // namespace kiln::autograd
