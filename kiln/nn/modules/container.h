#pragma once
// Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict and Functional,
// with libtorch's spellings. AnyModule erases a module's type behind a Tensor -> Tensor forward.
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"

namespace kiln::nn {

class AnyModule {
 public:
  AnyModule() = default;
  template <class M>
  requires std::is_base_of_v<Module, M> AnyModule(
      std::shared_ptr<M> module)  // NOLINT: Sequential(Linear(...), ReLU()) converts
      : module_(module),
        forward_([m = module.get()](const Tensor& x) -> Tensor { return m->forward(x); }),
        clone_([m = module.get()](const std::optional<Device>& device) {
          return AnyModule(std::dynamic_pointer_cast<M>(m->clone(device)));
        }) {}
  template <class M>
  AnyModule(const ModuleHolder<M>& holder) : AnyModule(holder.ptr()) {}  // NOLINT

  Tensor forward(const Tensor& x) const { return forward_(x); }
  // A deep copy of the module (Module::clone), keeping its type.
  AnyModule clone(const std::optional<Device>& device = std::nullopt) const {
    return clone_(device);
  }
  const std::shared_ptr<Module>& ptr() const { return module_; }
  template <class M>
  M* get() const {
    M* m = dynamic_cast<M*>(module_.get());
    KILN_CHECK(m != nullptr, "AnyModule: the module is a ", module_->name(),
               ", not the requested type");
    return m;
  }
  bool is_empty() const { return module_ == nullptr; }

 private:
  std::shared_ptr<Module> module_;
  std::function<Tensor(const Tensor&)> forward_;
  std::function<AnyModule(const std::optional<Device>&)> clone_;
};

class SequentialImpl : public Module {
 public:
  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;
  SequentialImpl() = default;
  template <class... Modules>
  requires(sizeof...(Modules) > 0 && (std::is_convertible_v<Modules, AnyModule> &&
                                      ...)) explicit SequentialImpl(Modules&&... modules) {
    (push_back(AnyModule(std::forward<Modules>(modules))), ...);
  }
  // Sequential({{"fc", Linear(3, 4)}, {"act", ReLU()}}).
  SequentialImpl(std::initializer_list<std::pair<std::string, AnyModule>> named);

  void push_back(AnyModule module);
  void push_back(std::string name, AnyModule module);
  void extend(const SequentialImpl& other);
  Tensor forward(const Tensor& x) const;

  size_t size() const { return modules_.size(); }
  bool is_empty() const { return modules_.empty(); }
  std::shared_ptr<Module> ptr(size_t index) const { return any(index).ptr(); }
  std::shared_ptr<Module> operator[](size_t index) const { return ptr(index); }
  template <class M>
  M& at(size_t index) const {
    return *any(index).get<M>();
  }
  const std::vector<AnyModule>& modules_in_order() const { return modules_; }
  std::vector<AnyModule>::const_iterator begin() const { return modules_.begin(); }
  std::vector<AnyModule>::const_iterator end() const { return modules_.end(); }
  void pretty_print(std::ostream& stream) const override;

 private:
  const AnyModule& any(size_t index) const;
  std::vector<AnyModule> modules_;
};
class Sequential : public ModuleHolder<SequentialImpl> {
 public:
  using ModuleHolder<SequentialImpl>::ModuleHolder;
  // Sequential({{"fc", Linear(3, 4)}, {"act", ReLU()}}).
  Sequential(std::initializer_list<std::pair<std::string, AnyModule>> named)
      : ModuleHolder(std::make_shared<SequentialImpl>(named)) {}
};

class ModuleListImpl : public Module {
 public:
  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;
  ModuleListImpl() = default;
  template <class... Modules>
  requires(sizeof...(Modules) > 0) explicit ModuleListImpl(Modules&&... modules) {
    (push_back(std::forward<Modules>(modules)), ...);
  }
  template <class M>
  void push_back(const ModuleHolder<M>& holder) {
    push_back(std::shared_ptr<Module>(holder.ptr()));
  }
  void push_back(std::shared_ptr<Module> module);
  void extend(const ModuleListImpl& other);
  void insert(size_t index, std::shared_ptr<Module> module);

  size_t size() const { return modules_.size(); }
  bool is_empty() const { return modules_.empty(); }
  const std::shared_ptr<Module>& ptr(size_t index) const;
  const std::shared_ptr<Module>& operator[](size_t index) const { return ptr(index); }
  template <class M>
  M& at(size_t index) const {
    M* m = dynamic_cast<M*>(ptr(index).get());
    KILN_CHECK(m != nullptr, "ModuleList: module ", index, " is a ", ptr(index)->name(),
               ", not the requested type");
    return *m;
  }
  std::vector<std::shared_ptr<Module>>::const_iterator begin() const { return modules_.begin(); }
  std::vector<std::shared_ptr<Module>>::const_iterator end() const { return modules_.end(); }
  void pretty_print(std::ostream& stream) const override;

 private:
  void rename_children();
  std::vector<std::shared_ptr<Module>> modules_;
};
KILN_MODULE(ModuleList);

class ModuleDictImpl : public Module {
 public:
  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;
  ModuleDictImpl() = default;
  explicit ModuleDictImpl(
      const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules);
  explicit ModuleDictImpl(const OrderedDict<std::string, std::shared_ptr<Module>>& modules);

  void insert(const std::string& key, std::shared_ptr<Module> module);
  template <class M>
  void insert(const std::string& key, const ModuleHolder<M>& holder) {
    insert(key, std::shared_ptr<Module>(holder.ptr()));
  }
  std::shared_ptr<Module> pop(const std::string& key);
  void clear();
  bool contains(const std::string& key) const { return named_children().contains(key); }
  size_t size() const { return children().size(); }
  bool empty() const { return size() == 0; }
  std::vector<std::string> keys() const { return named_children().keys(); }
  std::vector<std::shared_ptr<Module>> values() const { return children(); }
  std::shared_ptr<Module> operator[](const std::string& key) const;
  template <class M>
  M& at(const std::string& key) const {
    std::shared_ptr<Module> m = (*this)[key];
    M* typed = dynamic_cast<M*>(m.get());
    KILN_CHECK(typed != nullptr, "ModuleDict: module '", key, "' is a ", m->name(),
               ", not the requested type");
    return *typed;
  }
  void pretty_print(std::ostream& stream) const override;
};
KILN_MODULE(ModuleDict);

class ParameterListImpl : public Module {
 public:
  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;
  ParameterListImpl() = default;
  explicit ParameterListImpl(const std::vector<Tensor>& params);
  void append(const Tensor& param);
  void extend(const std::vector<Tensor>& params);
  size_t size() const { return local_parameters().size(); }
  bool is_empty() const { return size() == 0; }
  const Tensor& operator[](size_t index) const;
  void pretty_print(std::ostream& stream) const override;
};
KILN_MODULE(ParameterList);

class ParameterDictImpl : public Module {
 public:
  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;
  ParameterDictImpl() = default;
  explicit ParameterDictImpl(const OrderedDict<std::string, Tensor>& params);
  Tensor& insert(const std::string& key, const Tensor& param);
  bool contains(const std::string& key) const { return local_parameters().contains(key); }
  size_t size() const { return local_parameters().size(); }
  std::vector<std::string> keys() const { return local_parameters().keys(); }
  std::vector<Tensor> values() const { return local_parameters().values(); }
  const Tensor& operator[](const std::string& key) const { return local_parameters()[key]; }
  void pretty_print(std::ostream& stream) const override;
};
KILN_MODULE(ParameterDict);

// Wraps a function as a module (for Sequential): Functional(kiln::relu).
class FunctionalImpl : public Module {
  KILN_MODULE_CLONE(FunctionalImpl)
 public:
  explicit FunctionalImpl(std::function<Tensor(Tensor)> fn);
  template <class F, class... Args>
  requires(sizeof...(Args) > 0) FunctionalImpl(F fn, Args... bound)
      : FunctionalImpl(std::function<Tensor(Tensor)>(
            [fn, bound...](Tensor x) { return fn(std::move(x), bound...); })) {}
  Tensor forward(Tensor x) const { return fn_(std::move(x)); }
  void pretty_print(std::ostream& stream) const override;

 private:
  std::function<Tensor(Tensor)> fn_;
};
KILN_MODULE(Functional);

}  // namespace kiln::nn
