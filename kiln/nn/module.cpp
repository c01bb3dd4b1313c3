#include "kiln/nn/module.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "kiln/autograd/grad_mode.h"
#include "kiln/core/error.h"
#include "kiln/ops/ops.h"

namespace kiln::nn {
namespace {

// "kiln::nn::LinearImpl" -> "kiln::nn::Linear", as libtorch names modules.
std::string demangled_module_name(const std::type_info& type) {
  int status = 0;
  char* raw = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string name = status == 0 && raw ? raw : type.name();
  std::free(raw);
  // A class in an unnamed namespace prints as "(anonymous namespace)::Net"; PyTorch says "Net".
  for (constexpr std::string_view kAnon = "(anonymous namespace)::";;) {
    const size_t at = name.find(kAnon);
    if (at == std::string::npos) break;
    name.erase(at, kAnon.size());
  }
  constexpr std::string_view kImpl = "Impl";
  if (name.size() > kImpl.size() && name.ends_with(kImpl)) name.resize(name.size() - kImpl.size());
  return name;
}

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

std::string shape_string(const Tensor& t) {
  std::ostringstream s;
  s << t.sym_sizes();
  return s.str();
}

}  // namespace

std::shared_ptr<Module> Module::clone(const std::optional<Device>&) const {
  KILN_FAIL("clone() has not been implemented for ", name(), ". Subclass torch::nn::Cloneable<",
            name(), "> instead of torch::nn::Module to inherit the ability to clone.");
}

void Module::clear_registrations() {
  parameters_.clear();
  buffers_.clear();
  non_persistent_buffers_.clear();
  children_.clear();
  // A copy runs its own forward: overrides and hooks may point at the original.
  call_overrides_.clear();
  forward_pre_hooks_.clear();
}

int64_t Module::register_forward_pre_hook(std::function<void(const Tensor&)> hook) {
  forward_pre_hooks_.emplace_back(next_hook_id_, std::move(hook));
  return next_hook_id_++;
}

void Module::remove_forward_pre_hook(int64_t id) {
  std::erase_if(forward_pre_hooks_, [id](const auto& h) { return h.first == id; });
}

void Module::copy_state_from(const Module& source, const std::optional<Device>& device,
                             bool recurse) {
  NoGradGuard no_grad;
  auto copy_tensors = [&](OrderedDict<std::string, Tensor>& mine,
                          const OrderedDict<std::string, Tensor>& theirs, const char* kind) {
    for (const auto& item : theirs) {
      Tensor* dst = mine.find(item.key());
      KILN_CHECK(dst != nullptr, "clone: the copy of ", name(), " has no ", kind, " '", item.key(),
                 "' (reset() must register every ", kind, " the original has)");
      const Tensor& src = item.value();
      if (!src.defined()) continue;
      KILN_CHECK(dst->defined() && !dst->is_same(src), "clone: the copy of ", name(), " shares ",
                 kind, " '", item.key(), "' with the original; reset() must register new tensors");
      Tensor data = src.detach().clone();
      if (device) data = data.to(*device);
      dst->set_data(data);
      dst->requires_grad_(src.requires_grad());
    }
  };
  copy_tensors(parameters_, source.parameters_, "parameter");
  copy_tensors(buffers_, source.buffers_, "buffer");
  for (const auto& child : source.children_) {
    if (!recurse) break;
    std::shared_ptr<Module>* mine = children_.find(child.key());
    KILN_CHECK(mine != nullptr && *mine, "clone: the copy of ", name(), " has no submodule '",
               child.key(), "' (reset() must register every submodule the original has)");
    KILN_CHECK(mine->get() != child.value().get(), "clone: the copy of ", name(),
               " shares submodule '", child.key(),
               "' with the original; reset() must register new submodules");
    (*mine)->clone_from(*child.value(), device);
  }
  is_training_ = source.is_training_;
}

Module::Module() = default;
Module::Module(std::string name) : name_(std::move(name)) {}

const std::string& Module::name() const {
  if (name_.empty()) name_ = demangled_module_name(typeid(*this));
  return name_;
}

void Module::collect_named(const std::string& prefix, bool buffers, bool persistent_only,
                           OrderedDict<std::string, Tensor>& out) const {
  for (const auto& item : buffers ? buffers_ : parameters_) {
    if (persistent_only && std::ranges::count(non_persistent_buffers_, item.key())) continue;
    out.insert(join(prefix, item.key()), item.value());
  }
  for (const auto& child : children_)
    child.value()->collect_named(join(prefix, child.key()), buffers, persistent_only, out);
}

OrderedDict<std::string, Tensor> Module::named_parameters(bool recurse) const {
  if (!recurse) return parameters_;
  OrderedDict<std::string, Tensor> out;
  collect_named("", false, false, out);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  return named_parameters(recurse).values();
}

OrderedDict<std::string, Tensor> Module::named_buffers(bool recurse) const {
  if (!recurse) return buffers_;
  OrderedDict<std::string, Tensor> out;
  collect_named("", true, false, out);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

std::vector<std::pair<std::string, Tensor>> Module::named_tensors() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& p : named_parameters()) out.emplace_back(p.key(), p.value());
  for (const auto& b : named_buffers()) out.emplace_back(b.key(), b.value());
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const { return children_.values(); }

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_children() const {
  return children_;
}

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_modules(const std::string& prefix,
                                                                        bool include_self) {
  OrderedDict<std::string, std::shared_ptr<Module>> out;
  if (include_self) out.insert(prefix, shared_from_this());
  for (const auto& child : children_)
    out.update(child.value()->named_modules(join(prefix, child.key()), true));
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool include_self) {
  return named_modules("", include_self).values();
}

void Module::train(bool on) {
  is_training_ = on;
  for (const auto& child : children_) child.value()->train(on);
}

void Module::to(Device device, ScalarType dtype, bool non_blocking) {
  NoGradGuard no_grad;
  auto convert = [&](Tensor& t, bool floating_only) {
    if (!t.defined()) return;
    ScalarType target = floating_only && !t.is_floating_point() ? t.dtype() : dtype;
    t.set_data(t.to(device, target, non_blocking));
    if (t.grad().defined()) t.grad().set_data(t.grad().to(device, target, non_blocking));
  };
  for (auto& p : parameters_) convert(p.value(), true);
  for (auto& b : buffers_) convert(b.value(), true);
  for (auto& child : children_) child.value()->to(device, dtype, non_blocking);
}

void Module::to(ScalarType dtype, bool non_blocking) {
  NoGradGuard no_grad;
  for (auto& p : parameters_) p.value().set_data(p.value().to(dtype, non_blocking));
  for (auto& b : buffers_)
    if (b.value().is_floating_point()) b.value().set_data(b.value().to(dtype, non_blocking));
  for (auto& child : children_) child.value()->to(dtype, non_blocking);
}

void Module::to(Device device, bool non_blocking) {
  NoGradGuard no_grad;
  for (auto& p : parameters_) p.value().set_data(p.value().to(device, non_blocking));
  for (auto& b : buffers_) b.value().set_data(b.value().to(device, non_blocking));
  for (auto& child : children_) child.value()->to(device, non_blocking);
}

void Module::zero_grad(bool set_to_none) {
  for (Tensor& p : parameters()) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      NoGradGuard no_grad;
      p.mutable_grad() = p.grad().detach();
      p.mutable_grad().zero_();
    }
  }
}

void Module::apply(const std::function<void(Module&)>& fn) {
  fn(*this);
  for (auto& child : children_) child.value()->apply(fn);
}

void Module::apply(const std::function<void(const std::string&, Module&)>& fn,
                   const std::string& prefix) {
  fn(prefix, *this);
  for (auto& child : children_) child.value()->apply(fn, join(prefix, child.key()));
}

OrderedDict<std::string, Tensor> Module::state_dict() const {
  OrderedDict<std::string, Tensor> out;
  collect_named("", false, false, out);
  collect_named("", true, true, out);
  return out;
}

LoadStateDictResult Module::load_state_dict(const OrderedDict<std::string, Tensor>& state,
                                            bool strict) {
  LoadStateDictResult result;
  OrderedDict<std::string, Tensor> own = state_dict();
  for (const auto& item : own) {
    const Tensor* src = state.find(item.key());
    if (!src) {
      result.missing_keys.push_back(item.key());
    } else if (src->sym_sizes() != item.value().sym_sizes()) {
      result.mismatched_keys.push_back(item.key() + ": expected " + shape_string(item.value()) +
                                       ", got " + shape_string(*src));
    }
  }
  for (const auto& item : state)
    if (!own.contains(item.key())) result.unexpected_keys.push_back(item.key());

  if (strict && !result.ok()) {
    std::ostringstream msg;
    msg << "Error(s) in loading state_dict for " << name() << ":";
    auto list = [&](const char* what, const std::vector<std::string>& keys) {
      if (keys.empty()) return;
      msg << "\n  " << what << ":";
      for (const std::string& k : keys) msg << " \"" << k << "\"";
    };
    list("Missing key(s) in state_dict", result.missing_keys);
    list("Unexpected key(s) in state_dict", result.unexpected_keys);
    list("Size mismatch for", result.mismatched_keys);
    KILN_FAIL(msg.str());
  }
  NoGradGuard no_grad;
  for (auto& item : own) {
    const Tensor* src = state.find(item.key());
    if (src && src->sym_sizes() == item.value().sym_sizes()) item.value().copy_(*src);
  }
  return result;
}

void Module::pretty_print(std::ostream& stream) const { stream << name(); }

Tensor& Module::register_parameter(std::string name, Tensor tensor, bool requires_grad) {
  KILN_CHECK(!name.empty(), "register_parameter: the parameter name must not be empty");
  KILN_CHECK(name.find('.') == std::string::npos, "register_parameter: parameter name '", name,
             "' must not contain a dot");
  if (tensor.defined()) tensor.requires_grad_(requires_grad);
  return parameters_.insert(std::move(name), std::move(tensor));
}

Tensor& Module::register_buffer(std::string name, Tensor tensor, bool persistent) {
  KILN_CHECK(!name.empty(), "register_buffer: the buffer name must not be empty");
  KILN_CHECK(name.find('.') == std::string::npos, "register_buffer: buffer name '", name,
             "' must not contain a dot");
  if (!persistent) non_persistent_buffers_.push_back(name);
  return buffers_.insert(std::move(name), std::move(tensor));
}

void Module::add_child(std::string name, std::shared_ptr<Module> child) {
  KILN_CHECK(!name.empty(), "register_module: the submodule name must not be empty");
  KILN_CHECK(name.find('.') == std::string::npos, "register_module: submodule name '", name,
             "' must not contain a dot");
  KILN_CHECK(child != nullptr, "register_module: submodule '", name, "' is empty (null)");
  children_.insert(std::move(name), std::move(child));
}

void Module::unregister_module(const std::string& name) { children_.erase(name); }

void Module::print_tree(std::ostream& stream, int indent) const {
  pretty_print(stream);
  if (children_.is_empty()) return;
  stream << "(\n";
  for (const auto& child : children_) {
    stream << std::string(indent + 2, ' ') << "(" << child.key() << "): ";
    child.value()->print_tree(stream, indent + 2);
    stream << "\n";
  }
  stream << std::string(indent, ' ') << ")";
}

std::ostream& operator<<(std::ostream& stream, const Module& module) {
  module.print_tree(stream, 0);
  return stream;
}

}  // namespace kiln::nn
