#include "kiln/optim/optimizer.h"

#include <string>

#include "kiln/autograd/grad_mode.h"
#include "kiln/core/error.h"
#include "kiln/core/graph_break.h"
#include "kiln/ops/ops.h"

namespace kiln::optim {

OptimizerParamGroup::OptimizerParamGroup(const OptimizerParamGroup& other)
    : params_(other.params_), options_(other.options_ ? other.options_->clone() : nullptr) {}

OptimizerParamGroup& OptimizerParamGroup::operator=(const OptimizerParamGroup& other) {
  params_ = other.params_;
  options_ = other.options_ ? other.options_->clone() : nullptr;
  return *this;
}

OptimizerOptions& OptimizerParamGroup::options() {
  KILN_CHECK(options_ != nullptr, "OptimizerParamGroup: the group has no options");
  return *options_;
}

const OptimizerOptions& OptimizerParamGroup::options() const {
  KILN_CHECK(options_ != nullptr, "OptimizerParamGroup: the group has no options");
  return *options_;
}

Optimizer::Optimizer(std::vector<OptimizerParamGroup> param_groups,
                     std::unique_ptr<OptimizerOptions> defaults)
    : defaults_(std::move(defaults)) {
  for (const OptimizerParamGroup& g : param_groups) add_param_group(g);
}

void Optimizer::add_param_group(const OptimizerParamGroup& group) {
  OptimizerParamGroup g(group.params(),
                        group.has_options() ? group.options().clone() : defaults_->clone());
  std::vector<Tensor> seen = parameters();
  for (const Tensor& p : g.params()) {
    KILN_CHECK(p.defined(), "optimizer: a parameter is an undefined tensor");
    KILN_CHECK(p.is_leaf(), "optimizer: can't optimize a non-leaf Tensor");
    for (const Tensor& q : seen)
      KILN_CHECK(!q.is_same(p),
                 "optimizer: a parameter appears more than once (in one group or "
                 "in several parameter groups)");
    seen.push_back(p);
  }
  param_groups_.push_back(std::move(g));
}

void Optimizer::zero_grad(bool set_to_none) {
  for (OptimizerParamGroup& g : param_groups_) {
    for (Tensor& p : g.params()) {
      if (!p.grad().defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
      } else {
        NoGradGuard no_grad;
        p.grad().detach().zero_();
      }
    }
  }
}

bool Optimizer::defer_in_capture(const char* name, const LossClosure& closure) {
  if (!compiler::is_capturing()) return false;
  compiler::CaptureContext* capture = compiler::capture_context();
  if (!capture || closure)
    throw compiler::GraphBreak(
        std::string(name) +
        (closure ? " with a closure re-evaluates the loss, which a graph does not replay"
                 : " keeps its step count, learning rate and state buffers in C++, which this "
                   "capture would replay as constants") +
        "; the function runs eagerly");
  // The step count, learning rate and lazily made buffers stay C++ state: the step runs eagerly
  // (one fused update per parameter list) after each call of the graph, which sets the .grad it
  // reads first.
  capture->defer(name, [this, alive = std::weak_ptr<const bool>(alive_), name] {
    KILN_CHECK(!alive.expired(), "compile: the ", name,
               " a compiled function's graph runs after each call belongs to an optimizer that "
               "no longer exists (the function's variable now names another one?); call "
               "kiln::compiler::reset() so that the function is captured again");
    step();
  });
  return true;
}

Tensor Optimizer::evaluate(const LossClosure& closure) {
  if (!closure) return Tensor();
  AutoGradMode enable_grad(true);
  return closure();
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> out;
  for (const OptimizerParamGroup& g : param_groups_)
    out.insert(out.end(), g.params().begin(), g.params().end());
  return out;
}

OrderedDict<std::string, Tensor> Optimizer::state_dict() const {
  OrderedDict<std::string, Tensor> out;
  int64_t index = 0;
  for (size_t gi = 0; gi < param_groups_.size(); ++gi) {
    const OptimizerParamGroup& g = param_groups_[gi];
    const std::string group = "param_groups." + std::to_string(gi) + ".";
    std::vector<int64_t> ids;
    for (const Tensor& p : g.params()) {
      ids.push_back(index);
      auto it = state_.find(p.impl());
      if (it != state_.end()) {
        const std::string prefix = "state." + std::to_string(index) + ".";
        out.insert(prefix + "step", scalar_tensor(it->second.step, TensorOptions(kInt64)));
        for (const auto& b : it->second.buffers) out.insert(prefix + b.key(), b.value().clone());
        for (const auto& h : it->second.history)
          out.insert(prefix + "history." + h.key(), h.value().clone());
        for (const auto& [name, value] : it->second.scalars)
          out.insert(prefix + "scalar." + name, scalar_tensor(value, TensorOptions(kFloat64)));
      }
      ++index;
    }
    out.insert(group + "params", kiln::tensor(ids));
    for (const auto& [name, value] : g.options().to_map())
      out.insert(group + name, scalar_tensor(value, TensorOptions(kFloat64)));
  }
  return out;
}

void Optimizer::load_state_dict(const OrderedDict<std::string, Tensor>& state) {
  std::vector<Tensor> params = parameters();
  NoGradGuard no_grad;
  for (size_t gi = 0; gi < param_groups_.size(); ++gi) {
    const std::string group = "param_groups." + std::to_string(gi) + ".";
    const Tensor* ids = state.find(group + "params");
    KILN_CHECK(ids != nullptr, "optimizer load_state_dict: missing '", group,
               "params' (the saved optimizer has fewer parameter groups)");
    KILN_CHECK(ids->numel() == static_cast<int64_t>(param_groups_[gi].params().size()),
               "optimizer load_state_dict: parameter group ", gi, " has ",
               param_groups_[gi].params().size(), " parameters but the saved state has ",
               ids->numel());
    std::map<std::string, double> options = param_groups_[gi].options().to_map();
    for (auto& [name, value] : options)
      if (const Tensor* t = state.find(group + name)) value = t->item<double>();
    param_groups_[gi].options().from_map(options);
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string prefix = "state." + std::to_string(i) + ".";
    const Tensor* step = state.find(prefix + "step");
    if (!step) continue;
    ParamState& s = state_of(params[i]);
    s.step = step->item<int64_t>();
    s.buffers.clear();
    s.scalars.clear();
    s.history.clear();
    for (const auto& item : state) {
      if (!item.key().starts_with(prefix) || item.key() == prefix + "step") continue;
      const Tensor& saved = item.value();
      if (item.key().starts_with(prefix + "scalar.")) {
        s.scalars[item.key().substr(prefix.size() + 7)] = saved.item<double>();
        continue;
      }
      if (item.key().starts_with(prefix + "history.")) {
        s.history.insert(item.key().substr(prefix.size() + 8), saved.clone());
        continue;
      }
      KILN_CHECK(saved.sizes() == params[i].sizes(), "optimizer load_state_dict: '", item.key(),
                 "' has shape ", saved.sizes(), " but parameter ", i, " has shape ",
                 params[i].sizes());
      s.buffers.insert(item.key().substr(prefix.size()), saved.clone());
    }
  }
}

}  // namespace kiln::optim
