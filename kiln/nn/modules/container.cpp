#include "kiln/nn/modules/container.h"

#include <ostream>

#include "kiln/autograd/grad_mode.h"

namespace kiln::nn {
namespace {

void print_parameters(std::ostream& stream, const char* title,
                      const OrderedDict<std::string, Tensor>& params) {
  stream << title << "(";
  for (const auto& p : params)
    stream << "\n  (" << p.key() << "): Parameter containing: [" << dtype_name(p->dtype())
           << " of size " << p->sym_sizes() << "]";
  stream << (params.is_empty() ? ")" : "\n)");
}

// A copy of `self` whose children and parameters are already clones: takes self's own tensor
// values and training mode.
std::shared_ptr<Module> finish_clone(std::shared_ptr<Module> copy, const Module& self,
                                     const std::optional<Device>& device) {
  copy->copy_state_from(self, device, /*recurse=*/false);
  return copy;
}

Tensor cloned_parameter(const Tensor& p, const std::optional<Device>& device) {
  NoGradGuard no_grad;
  Tensor c = p.detach().clone();
  return device ? c.to(*device) : c;
}

}  // namespace

std::shared_ptr<Module> SequentialImpl::clone(const std::optional<Device>& device) const {
  auto copy = std::make_shared<SequentialImpl>();
  const std::vector<std::string> names = named_children().keys();
  for (size_t i = 0; i < modules_.size(); ++i) copy->push_back(names[i], modules_[i].clone(device));
  return finish_clone(copy, *this, device);
}

std::shared_ptr<Module> ModuleListImpl::clone(const std::optional<Device>& device) const {
  auto copy = std::make_shared<ModuleListImpl>();
  for (const auto& m : modules_) copy->push_back(m->clone(device));
  return finish_clone(copy, *this, device);
}

std::shared_ptr<Module> ModuleDictImpl::clone(const std::optional<Device>& device) const {
  auto copy = std::make_shared<ModuleDictImpl>();
  for (const auto& item : named_children()) copy->insert(item.key(), item.value()->clone(device));
  return finish_clone(copy, *this, device);
}

std::shared_ptr<Module> ParameterListImpl::clone(const std::optional<Device>& device) const {
  auto copy = std::make_shared<ParameterListImpl>();
  for (const auto& p : local_parameters())
    copy->register_parameter(p.key(), cloned_parameter(p.value(), device), p->requires_grad());
  return finish_clone(copy, *this, device);
}

std::shared_ptr<Module> ParameterDictImpl::clone(const std::optional<Device>& device) const {
  auto copy = std::make_shared<ParameterDictImpl>();
  for (const auto& p : local_parameters())
    copy->register_parameter(p.key(), cloned_parameter(p.value(), device), p->requires_grad());
  return finish_clone(copy, *this, device);
}

SequentialImpl::SequentialImpl(std::initializer_list<std::pair<std::string, AnyModule>> named) {
  for (const auto& [name, module] : named) push_back(name, module);
}

void SequentialImpl::push_back(AnyModule module) {
  push_back(std::to_string(modules_.size()), std::move(module));
}

void SequentialImpl::push_back(std::string name, AnyModule module) {
  KILN_CHECK(!module.is_empty(), "Sequential: cannot add an empty module");
  register_module(std::move(name), module.ptr());
  modules_.push_back(std::move(module));
}

void SequentialImpl::extend(const SequentialImpl& other) {
  for (const AnyModule& m : other.modules_) push_back(m);
}

Tensor SequentialImpl::forward(const Tensor& x) const {
  KILN_CHECK(!modules_.empty(), "Sequential: cannot call forward() on an empty Sequential");
  Tensor y = modules_.front().forward(x);
  for (size_t i = 1; i < modules_.size(); ++i) y = modules_[i].forward(y);
  return y;
}

const AnyModule& SequentialImpl::any(size_t index) const {
  KILN_CHECK(index < modules_.size(), "Sequential: index ", index, " is out of range for size ",
             modules_.size());
  return modules_[index];
}

void SequentialImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::Sequential"; }

void ModuleListImpl::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

void ModuleListImpl::extend(const ModuleListImpl& other) {
  for (const auto& m : other.modules_) push_back(m);
}

void ModuleListImpl::insert(size_t index, std::shared_ptr<Module> module) {
  KILN_CHECK(index <= modules_.size(), "ModuleList::insert: index ", index,
             " is out of range for size ", modules_.size());
  KILN_CHECK(module != nullptr, "ModuleList::insert: the module is empty (null)");
  modules_.insert(modules_.begin() + static_cast<std::ptrdiff_t>(index), std::move(module));
  rename_children();
}

// Children are named by position, so an insertion renames those after it.
void ModuleListImpl::rename_children() {
  for (const std::string& key : named_children().keys()) unregister_module(key);
  for (size_t i = 0; i < modules_.size(); ++i) register_module(std::to_string(i), modules_[i]);
}

const std::shared_ptr<Module>& ModuleListImpl::ptr(size_t index) const {
  KILN_CHECK(index < modules_.size(), "ModuleList: index ", index, " is out of range for size ",
             modules_.size());
  return modules_[index];
}

void ModuleListImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::ModuleList"; }

ModuleDictImpl::ModuleDictImpl(
    const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules) {
  for (const auto& [key, module] : modules) insert(key, module);
}

ModuleDictImpl::ModuleDictImpl(const OrderedDict<std::string, std::shared_ptr<Module>>& modules) {
  for (const auto& item : modules) insert(item.key(), item.value());
}

void ModuleDictImpl::insert(const std::string& key, std::shared_ptr<Module> module) {
  if (contains(key)) {
    replace_module(key, std::move(module));
  } else {
    register_module(key, std::move(module));
  }
}

std::shared_ptr<Module> ModuleDictImpl::pop(const std::string& key) {
  std::shared_ptr<Module> m = (*this)[key];
  unregister_module(key);
  return m;
}

void ModuleDictImpl::clear() {
  for (const std::string& key : keys()) unregister_module(key);
}

std::shared_ptr<Module> ModuleDictImpl::operator[](const std::string& key) const {
  auto children = named_children();
  KILN_CHECK(children.contains(key), "ModuleDict: no module named '", key, "'");
  return children[key];
}

void ModuleDictImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::ModuleDict"; }

ParameterListImpl::ParameterListImpl(const std::vector<Tensor>& params) { extend(params); }

void ParameterListImpl::append(const Tensor& param) {
  register_parameter(std::to_string(size()), param, param.requires_grad());
}

void ParameterListImpl::extend(const std::vector<Tensor>& params) {
  for (const Tensor& p : params) append(p);
}

const Tensor& ParameterListImpl::operator[](size_t index) const {
  KILN_CHECK(index < size(), "ParameterList: index ", index, " is out of range for size ", size());
  return local_parameters()[index].value();
}

void ParameterListImpl::pretty_print(std::ostream& stream) const {
  print_parameters(stream, "kiln::nn::ParameterList", local_parameters());
}

ParameterDictImpl::ParameterDictImpl(const OrderedDict<std::string, Tensor>& params) {
  for (const auto& p : params) insert(p.key(), p.value());
}

Tensor& ParameterDictImpl::insert(const std::string& key, const Tensor& param) {
  return register_parameter(key, param, param.requires_grad());
}

void ParameterDictImpl::pretty_print(std::ostream& stream) const {
  print_parameters(stream, "kiln::nn::ParameterDict", local_parameters());
}

FunctionalImpl::FunctionalImpl(std::function<Tensor(Tensor)> fn) : fn_(std::move(fn)) {}

void FunctionalImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Functional()";
}

}  // namespace kiln::nn
