#pragma once
// nn::Module: the base of every layer and model, with libtorch's interface. A module owns
// named parameters (tensors that require grad and that optimizers update), buffers (state
// such as BatchNorm's running statistics) and child modules; the names compose into the
// dotted paths of named_parameters() and state_dict() ("encoder.layers.0.linear1.weight").
#include <any>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <typeindex>
#include <utility>
#include <vector>

#include "kiln/compile/options.h"
#include "kiln/core/tensor.h"
#include "kiln/nn/ordered_dict.h"

namespace kiln::serialize {
class OutputArchive;
class InputArchive;
}  // namespace kiln::serialize

namespace kiln::nn {

template <class Contained>
class ModuleHolder;

// What load_state_dict found, by name (PyTorch's _IncompatibleKeys plus shape mismatches).
struct LoadStateDictResult {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
  std::vector<std::string> mismatched_keys;  // "name: expected [3, 4], got [4, 3]"
  bool ok() const {
    return missing_keys.empty() && unexpected_keys.empty() && mismatched_keys.empty();
  }
};

class Module : public std::enable_shared_from_this<Module> {
 public:
  Module();
  explicit Module(std::string name);
  Module(const Module&) = default;
  Module& operator=(const Module&) = default;
  virtual ~Module() = default;

  // The type's name ("kiln::nn::Linear", or the user's class name without a trailing "Impl").
  const std::string& name() const;

  std::vector<Tensor> parameters(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  OrderedDict<std::string, std::shared_ptr<Module>> named_children() const;
  // This module (first, when include_self) and every descendant, depth first.
  std::vector<std::shared_ptr<Module>> modules(bool include_self = true);
  OrderedDict<std::string, std::shared_ptr<Module>> named_modules(const std::string& prefix = "",
                                                                  bool include_self = true);

  virtual void train(bool on = true);
  void eval() { train(false); }
  virtual bool is_training() const { return is_training_; }

  // Converts parameters and buffers in place (tensors keep their identity, as in libtorch).
  virtual void to(Device device, ScalarType dtype, bool non_blocking = false);
  virtual void to(ScalarType dtype, bool non_blocking = false);
  virtual void to(Device device, bool non_blocking = false);

  virtual void zero_grad(bool set_to_none = true);
  void apply(const std::function<void(Module&)>& fn);
  void apply(const std::function<void(const std::string&, Module&)>& fn,
             const std::string& prefix = "");

  // Parameters and buffers by dotted name (buffers registered as non-persistent are left out).
  OrderedDict<std::string, Tensor> state_dict() const;
  // Copies values into this module's tensors. With strict, any missing, unexpected or
  // mismatched key raises one error that lists them all; otherwise they are returned.
  LoadStateDictResult load_state_dict(const OrderedDict<std::string, Tensor>& state,
                                      bool strict = true);

  // libtorch's archive interface: every state_dict() entry, by its dotted name. load reads each
  // into the module's own tensor (kiln/io/archive.h).
  virtual void save(serialize::OutputArchive& archive) const;
  virtual void load(serialize::InputArchive& archive);

  // One line describing this module (children are printed by operator<<).
  virtual void pretty_print(std::ostream& stream) const;

  Tensor& register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  Tensor& register_buffer(std::string name, Tensor tensor, bool persistent = true);
  template <class M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    add_child(std::move(name), module);
    return module;
  }
  template <class M>
  std::shared_ptr<M> register_module(std::string name, ModuleHolder<M> holder) {
    return register_module(std::move(name), holder.ptr());
  }
  template <class M>
  std::shared_ptr<M> replace_module(const std::string& name, std::shared_ptr<M> module) {
    children_[name] = module;
    return module;
  }
  template <class M>
  std::shared_ptr<M> replace_module(const std::string& name, ModuleHolder<M> holder) {
    return replace_module(name, holder.ptr());
  }
  void unregister_module(const std::string& name);

  // The named tensors and children, for modules that need to reach them directly.
  const OrderedDict<std::string, Tensor>& local_parameters() const { return parameters_; }
  const OrderedDict<std::string, Tensor>& local_buffers() const { return buffers_; }

  template <class M>
  M* as() {
    return dynamic_cast<M*>(this);
  }

  // Regional compilation (PyTorch's module.compile()): from now on, calls through a ModuleHolder
  // (`block(x)`) run a compiled forward that every module of this type compiled with the same
  // options shares, reading each module's own parameters and buffers (kiln/compile/region.h).
  // Calling impl->forward() directly still runs eagerly.
  void compile(CompileOptions options = {}) { compile_options_ = std::move(options); }
  const std::optional<CompileOptions>& compile_options() const { return compile_options_; }

  // Forward pre-hooks and call overrides, for kiln::quantization (prepare puts observers on a
  // layer's input, convert runs an int8 layer in its place, as PyTorch's eager flow swaps
  // modules). Linear, Conv2d and LSTM honour them in forward() itself, so that libtorch-style
  // models calling `fc->forward(x)` are quantized too.
  //
  // A pre-hook sees the input before forward runs; register returns an id for remove.
  int64_t register_forward_pre_hook(std::function<void(const Tensor&)> hook);
  void remove_forward_pre_hook(int64_t id);
  void run_forward_pre_hooks(const Tensor& input) const {
    for (const auto& [id, hook] : forward_pre_hooks_) hook(input);
  }
  // What runs in place of forward, one per call signature (the arguments by const reference):
  // set_call_override<Tensor(const Tensor&)>(f).
  template <class Signature>
  void set_call_override(std::function<Signature> f) {
    call_overrides_[std::type_index(typeid(Signature))] = std::move(f);
  }
  template <class Signature>
  const std::function<Signature>* call_override() const {
    if (call_overrides_.empty()) return nullptr;
    auto it = call_overrides_.find(std::type_index(typeid(Signature)));
    return it == call_overrides_.end() ? nullptr
                                       : std::any_cast<std::function<Signature>>(&it->second);
  }
  // Parameters and buffers, every one, by dotted name.
  std::vector<std::pair<std::string, Tensor>> named_tensors() const;

  // A deep copy, as libtorch's: new parameters and buffers with the same values and
  // requires_grad (on `device` when given), children cloned, registered names kept, the same
  // training mode. Built-in modules and those derived from Cloneable<T> have it; on any other
  // module it is an error naming the type.
  virtual std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const;
  // For clone(): copies the values of source's parameters and buffers into this module's own
  // tensors of the same names (they must not be source's tensors) and its training mode, and
  // with `recurse`, makes each child of the same name a copy of source's.
  void copy_state_from(const Module& source, const std::optional<Device>& device,
                       bool recurse = true);

 protected:
  // Forgets every parameter, buffer and child, so that Cloneable::reset() can register anew.
  void clear_registrations();
  // Makes this child of a module being cloned a copy of `source` (see copy_state_from).
  virtual void clone_from(const Module& source, const std::optional<Device>& device) {
    copy_state_from(source, device);
  }

 private:
  void add_child(std::string name, std::shared_ptr<Module> child);
  void collect_named(const std::string& prefix, bool buffers, bool persistent_only,
                     OrderedDict<std::string, Tensor>& out) const;
  void print_tree(std::ostream& stream, int indent) const;
  friend std::ostream& operator<<(std::ostream& stream, const Module& module);

  mutable std::string name_;
  OrderedDict<std::string, Tensor> parameters_{"Parameter"};
  OrderedDict<std::string, Tensor> buffers_{"Buffer"};
  std::vector<std::string> non_persistent_buffers_;
  OrderedDict<std::string, std::shared_ptr<Module>> children_{"Submodule"};
  bool is_training_ = true;
  std::optional<CompileOptions> compile_options_;
  std::map<std::type_index, std::any> call_overrides_;
  std::vector<std::pair<int64_t, std::function<void(const Tensor&)>>> forward_pre_hooks_;
  int64_t next_hook_id_ = 0;
};

// libtorch's base for modules that clone themselves: Derived overrides reset(), which (re)creates
// its parameters, buffers and submodules; its constructor usually calls it too. clone() copies
// Derived, calls reset() on the copy and then copies the values in.
//   struct Net : torch::nn::Cloneable<Net> {
//     Net() { reset(); }
//     void reset() override { fc = register_module("fc", torch::nn::Linear(4, 2)); }
//     torch::nn::Linear fc{nullptr};
//   };
template <class Derived>
class Cloneable : public Module {
 public:
  using Module::Module;
  virtual void reset() = 0;

  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override {
    auto copy = std::make_shared<Derived>(static_cast<const Derived&>(*this));
    copy->clear_registrations();
    copy->reset();
    copy->copy_state_from(*this, device);
    return copy;
  }

 protected:
  void clone_from(const Module& source, const std::optional<Device>& device) override {
    static_cast<Derived&>(*this) = static_cast<const Derived&>(*source.clone(device));
  }
};

namespace detail {
// clone() of a built-in module M: a fresh M from the same options (a copy when M has none), whose
// tensors then take the values of self's.
template <class M>
std::shared_ptr<Module> clone_module(const M& self, const std::optional<Device>& device) {
  std::shared_ptr<M> copy;
  if constexpr (requires { M(self.options); }) {
    copy = std::make_shared<M>(self.options);
  } else {
    copy = std::make_shared<M>(self);
  }
  copy->copy_state_from(self, device);
  return copy;
}
}  // namespace detail

// Gives a built-in module class its clone() (placed first in the class body).
#define KILN_MODULE_CLONE(Impl)                                                           \
 public:                                                                                  \
  std::shared_ptr<::kiln::nn::Module> clone(const std::optional<::kiln::Device>& device = \
                                                std::nullopt) const override {            \
    return ::kiln::nn::detail::clone_module(*this, device);                               \
  }

// Prints the module tree like PyTorch: "Net(\n  (fc1): kiln::nn::Linear(...)\n)".
std::ostream& operator<<(std::ostream& stream, const Module& module);

}  // namespace kiln::nn
