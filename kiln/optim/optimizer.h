#pragma once
// Optimizer: parameter groups with per-group options, per-parameter state, zero_grad, step and
// state_dict, with libtorch's interface:
//   kiln::optim::AdamW opt(model->parameters(), kiln::optim::AdamWOptions(1e-3));
//   opt.zero_grad(); loss.backward(); opt.step();
// Each optimizer updates a parameter in one fused loop over its elements (see fused.h), not a
// chain of small tensor ops.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/nn/ordered_dict.h"

namespace kiln::serialize {
class OutputArchive;
class InputArchive;
}  // namespace kiln::serialize

namespace kiln::optim {

class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
  // Every option as a number (bools as 0/1), for state_dict; from_map reads the same names.
  virtual std::map<std::string, double> to_map() const = 0;
  virtual void from_map(const std::map<std::string, double>& values) = 0;
};

// CRTP base giving an options struct clone(), get_lr/set_lr over its lr field, and to_map/from_map
// over the fields its `for_each_field(f)` visits as f("name", field).
template <class Derived>
class OptimizerCloneableOptions : public OptimizerOptions {
 public:
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<Derived>(self());
  }
  double get_lr() const override { return self().lr(); }
  void set_lr(double lr) override { const_cast<Derived&>(self()).lr(lr); }
  std::map<std::string, double> to_map() const override {
    std::map<std::string, double> m;
    const_cast<Derived&>(self()).for_each_field(
        [&](const char* name, auto& field) { m[name] = static_cast<double>(field); });
    return m;
  }
  void from_map(const std::map<std::string, double>& m) override {
    const_cast<Derived&>(self()).for_each_field([&](const char* name, auto& field) {
      if (auto it = m.find(name); it != m.end())
        field = static_cast<std::decay_t<decltype(field)>>(it->second);
    });
  }

 private:
  const Derived& self() const { return static_cast<const Derived&>(*this); }
};

class OptimizerParamGroup {
 public:
  OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}  // NOLINT
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}
  OptimizerParamGroup(const OptimizerParamGroup& other);
  OptimizerParamGroup& operator=(const OptimizerParamGroup& other);
  OptimizerParamGroup(OptimizerParamGroup&&) = default;
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) = default;

  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }
  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }

  // The lr before any scheduler changed it (set by the first scheduler, shared by later ones).
  std::optional<double> initial_lr;

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
};

// Per-parameter state: a step count, named buffers (exp_avg, momentum_buffer, ...), scalars and
// free-shaped history tensors.
struct ParamState {
  int64_t step = 0;
  OrderedDict<std::string, Tensor> buffers{"State buffer"};  // shaped like the parameter
  std::map<std::string, double> scalars;                     // e.g. NAdam's mu_product
  // Tensors of any shape (L-BFGS's flat search direction and curvature history), saved as
  // state.<i>.history.<name>.
  OrderedDict<std::string, Tensor> history{"State history"};
};

using LossClosure = std::function<Tensor()>;

class Optimizer {
 public:
  Optimizer(std::vector<OptimizerParamGroup> param_groups,
            std::unique_ptr<OptimizerOptions> defaults);
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;
  virtual ~Optimizer() = default;

  // Runs one update. The closure, when given, re-evaluates the loss (LBFGS needs it).
  virtual Tensor step(LossClosure closure = nullptr) = 0;

  void add_param_group(const OptimizerParamGroup& group);
  void zero_grad(bool set_to_none = true);
  std::vector<OptimizerParamGroup>& param_groups() { return param_groups_; }
  const std::vector<OptimizerParamGroup>& param_groups() const { return param_groups_; }
  OptimizerOptions& defaults() { return *defaults_; }
  std::unordered_map<const void*, ParamState>& state() { return state_; }
  // All parameters of all groups, in order.
  std::vector<Tensor> parameters() const;

  // "state.<i>.step", "state.<i>.<buffer>" (i numbers the parameters across groups) and
  // "param_groups.<g>.<option>" / "param_groups.<g>.params" (indices), all as tensors.
  OrderedDict<std::string, Tensor> state_dict() const;
  void load_state_dict(const OrderedDict<std::string, Tensor>& state);
  // The state_dict() entries through libtorch's archives (kiln/io/archive.h).
  virtual void save(serialize::OutputArchive& archive) const;
  virtual void load(serialize::InputArchive& archive);

 protected:
  ParamState& state_of(const Tensor& param) { return state_[param.impl()]; }
  // What every step() does first: inside a compiled function's capture, defers the step to
  // after each call of the graph and returns true (then step() returns at once); a step with a
  // closure breaks the graph instead, before any state changes.
  bool defer_in_capture(const char* name, const LossClosure& closure);
  // Runs the closure with gradients enabled; an undefined tensor when there is none.
  static Tensor evaluate(const LossClosure& closure);

  std::vector<OptimizerParamGroup> param_groups_;
  std::unique_ptr<OptimizerOptions> defaults_;
  std::unordered_map<const void*, ParamState> state_;

 private:
  // Expires with the optimizer: a step deferred by a compiled function's graph checks it.
  std::shared_ptr<const bool> alive_ = std::make_shared<const bool>(true);
};

// Declares optimizer `Name` with options `Name##Options` and libtorch's two constructors.
#define KILN_OPTIMIZER(Name)                                                               \
  class Name : public Optimizer {                                                          \
   public:                                                                                 \
    Name(std::vector<OptimizerParamGroup> param_groups, Name##Options defaults)            \
        : Optimizer(std::move(param_groups), std::make_unique<Name##Options>(defaults)) {} \
    Name(std::vector<Tensor> params, Name##Options defaults)                               \
        : Name(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))},   \
               std::move(defaults)) {}                                                     \
    Tensor step(LossClosure closure = nullptr) override;                                   \
  }

}  // namespace kiln::optim
