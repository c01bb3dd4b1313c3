#pragma once
// Custom autograd functions, as libtorch's torch::autograd::Function<T>:
//   struct MyOp : kiln::autograd::Function<MyOp> {
//     static Tensor forward(AutogradContext* ctx, Tensor x) { ... }
//     static variable_list backward(AutogradContext* ctx, variable_list grads) { ... }
//   };
//   Tensor y = MyOp::apply(x);
// backward returns one gradient per forward argument, a tensor list's elements counted one by
// one; those of non-tensor arguments must be undefined, and extra trailing undefined ones are
// ignored (libtorch's rules).
#include <optional>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/autograd/engine.h"
#include "kiln/autograd/grad_mode.h"
#include "kiln/autograd/ivalue.h"
#include "kiln/autograd/node.h"
#include "kiln/autograd/saved_tensor.h"

namespace kiln::autograd {

class AutogradContext {
 public:
  void save_for_backward(variable_list to_save) { to_save_ = std::move(to_save); }
  variable_list get_saved_variables() const;
  void mark_dirty(const variable_list& inputs);
  void mark_non_differentiable(const variable_list& outputs);
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  bool needs_input_grad(size_t tensor_index) const {
    return tensor_index < needs_input_grad_.size() && needs_input_grad_[tensor_index];
  }
  std::unordered_map<std::string, IValue> saved_data;

 private:
  friend class CustomNodeBase;
  variable_list to_save_;
  std::vector<SavedTensor> saved_;
  std::weak_ptr<Node> node_;
  std::vector<bool> needs_input_grad_;
  std::unordered_set<const TensorImpl*> dirty_, non_differentiable_;
  bool materialize_grads_ = true;
  // Set while compiled autograd traces the backward: stand-ins for the saved variables.
  const variable_list* traced_saved_ = nullptr;
};

// The non-template half of a custom function's node.
class CustomNodeBase : public Node {
 public:
  AutogradContext ctx;
  // Links outputs to this node (after forward ran under no-grad). Replaces outputs that are
  // inputs returned unchanged with aliases, so the inputs' history is untouched.
  // is_tensor_argument: one entry per forward argument, a tensor list's elements counted one by
  // one (libtorch's rule): whether backward returns a gradient there.
  void finish(const variable_list& inputs, variable_list& outputs,
              std::vector<bool> is_tensor_argument);
  void release_variables() override;
  // Compiled autograd traces a custom function's backward with stand-ins for its saved
  // variables and for the tensors in saved_data; the other saved_data values are part of the
  // key (a new value is another graph).
  bool describe_for_trace(std::vector<Tensor>& saved, std::ostream& key) override;

 protected:
  // While alive, ctx's saved variables and saved_data tensors are the stand-ins in `saved` (in
  // describe_for_trace's order).
  class TracedSaved {
   public:
    TracedSaved(AutogradContext& ctx, const std::vector<Tensor>& saved);
    ~TracedSaved();
    TracedSaved(const TracedSaved&) = delete;
    TracedSaved& operator=(const TracedSaved&) = delete;

   private:
    AutogradContext& ctx_;
    variable_list variables_;
    std::vector<std::pair<std::string, IValue>> replaced_;
  };

  variable_list prepare_grads(variable_list&& grads) const;
  variable_list map_result(variable_list&& result) const;
  std::vector<SymShape> output_sizes_;
  std::vector<TensorOptions> output_options_;  // dtype and device of each output
  std::vector<bool> is_tensor_argument_;
};

// "torch::autograd::CppNode<T>", T's name demangled, as libtorch names a custom function's node.
std::string cpp_node_name(const std::type_info& function);

template <class T>
class CustomNode final : public CustomNodeBase {
 public:
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    return map_result(T::backward(&ctx, prepare_grads(std::move(grads))));
  }
  std::string name() const override { return cpp_node_name(typeid(T)); }
  std::vector<Tensor> apply_traced(std::vector<Tensor>&& grads,
                                   const std::vector<Tensor>& saved) override {
    const TracedSaved scope(ctx, saved);
    return map_result(T::backward(&ctx, prepare_grads(std::move(grads))));
  }
};

namespace detail {
// Gathers the tensors among forward's arguments, noting which argument slots hold one.
inline void collect(variable_list& out, std::vector<bool>& is_tensor, const Tensor& t) {
  out.push_back(t);
  is_tensor.push_back(true);
}
inline void collect(variable_list& out, std::vector<bool>& is_tensor, const variable_list& ts) {
  for (const auto& t : ts) collect(out, is_tensor, t);
}
inline void collect(variable_list& out, std::vector<bool>& is_tensor,
                    const std::optional<Tensor>& t) {
  if (t && t->defined()) return collect(out, is_tensor, *t);
  is_tensor.push_back(false);
}
template <class A>
void collect(variable_list&, std::vector<bool>& is_tensor, const A&) {
  is_tensor.push_back(false);
}
inline variable_list to_list(const Tensor& t) { return {t}; }
inline variable_list to_list(const variable_list& v) { return v; }
inline void from_list(Tensor& t, const variable_list& v) { t = v.at(0); }
inline void from_list(variable_list& t, const variable_list& v) { t = v; }
}  // namespace detail

template <class T>
struct Function {
  template <class... Args>
  static auto apply(Args&&... args) {
    auto node = std::make_shared<CustomNode<T>>();
    variable_list inputs;
    std::vector<bool> is_tensor_argument;
    (detail::collect(inputs, is_tensor_argument, args), ...);
    using R = decltype(T::forward(&node->ctx, std::forward<Args>(args)...));
    R out;
    {
      NoGradGuard no_grad;
      out = T::forward(&node->ctx, std::forward<Args>(args)...);
    }
    variable_list outs = detail::to_list(out);
    node->finish(inputs, outs, std::move(is_tensor_argument));
    detail::from_list(out, outs);
    return out;
  }
};

}  // namespace kiln::autograd
