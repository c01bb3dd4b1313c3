#pragma once
// ModuleHolder: libtorch's "module holder" pattern. `KILN_MODULE(Linear)` declares `Linear`, a
// shared handle to a `LinearImpl`, so models are written as
//   kiln::nn::Linear fc(4, 3);     // constructs LinearImpl(4, 3)
//   fc->weight;                     // members through ->
//   fc(x) == fc->forward(x);
// Copies of a holder share one module, which is what optimizers and parents keep.
#include <cstddef>
#include <memory>
#include <ostream>
#include <type_traits>
#include <utility>

#include "kiln/compile/region.h"
#include "kiln/core/error.h"

namespace kiln::nn {

template <class Contained>
class ModuleHolder {
 public:
  using ContainedType = Contained;

  // Default-constructs the module when it has a default constructor (as libtorch does).
  ModuleHolder() : impl_(default_construct()) {}
  ModuleHolder(std::nullptr_t) {}                  // NOLINT: an empty holder, assigned later
  ModuleHolder(std::shared_ptr<Contained> module)  // NOLINT: from register_module's result
      : impl_(std::move(module)) {}
  template <class Head, class... Tail>
  requires(!std::is_same_v<std::decay_t<Head>, ModuleHolder> &&
           !std::is_same_v<std::decay_t<Head>, std::nullptr_t> &&
           !std::is_convertible_v<Head, std::shared_ptr<Contained>> &&
           std::is_constructible_v<Contained, Head, Tail...>) explicit ModuleHolder(Head&& head,
                                                                                    Tail&&... tail)
      : impl_(std::make_shared<Contained>(std::forward<Head>(head), std::forward<Tail>(tail)...)) {}

  Contained* operator->() { return get(); }
  const Contained* operator->() const { return get(); }
  Contained& operator*() { return *get(); }
  const Contained& operator*() const { return *get(); }
  const std::shared_ptr<Contained>& ptr() const { return impl_; }
  Contained* get() const {
    KILN_CHECK(impl_ != nullptr, "Accessing an empty ModuleHolder (constructed with nullptr)");
    return impl_.get();
  }
  bool is_empty() const { return impl_ == nullptr; }
  explicit operator bool() const { return impl_ != nullptr; }

  // forward(args...), or its regional compile once the module's compile() was called.
  template <class... Args>
  decltype(auto) operator()(Args&&... args) {
    using Result = decltype(get()->forward(std::forward<Args>(args)...));
    if constexpr ((compiler::RegionArg<Args> && ...) && compiler::RegionResult<Result>) {
      if (get()->compile_options()) return call_compiled<Result, Args...>(args...);
    } else {
      KILN_CHECK(!get()->compile_options(), "compile(): ", get()->name(),
                 "'s forward takes or returns types kiln::compile cannot pass (Tensor, "
                 "std::vector<Tensor>, numbers, bool, Scalar; a Tensor, tuple or vector result)");
    }
    return get()->forward(std::forward<Args>(args)...);
  }
  template <class Arg>
  decltype(auto) operator[](Arg&& arg) {
    return (*get())[std::forward<Arg>(arg)];
  }

 protected:
  template <class Result, class... Args>
  Result call_compiled(const Args&... args) {
    std::shared_ptr<Contained> self = impl_;
    compiler::RegionModule m;
    m.identity = self.get();
    m.training = self->is_training();
    m.type = typeid(Contained);
    m.type_name = self->name();
    m.named_tensors = [self] { return self->named_tensors(); };
    m.forward = [self](const std::vector<compiler::Arg>& flat) {
      return [&]<size_t... I>(std::index_sequence<I...>) {
        return compiler::flatten_result(self->forward(compiler::from_arg<Args>(flat.at(I))...));
      }
      (std::index_sequence_for<Args...>());
    };
    return compiler::unflatten_result<Result>(
        compiler::call_region(m, *self->compile_options(), {compiler::to_arg(args)...}));
  }
  static std::shared_ptr<Contained> default_construct() {
    if constexpr (std::is_default_constructible_v<Contained>) return std::make_shared<Contained>();
    return nullptr;
  }
  std::shared_ptr<Contained> impl_;
};

// std::cout << model prints the module tree, as std::cout << *model does.
template <class Contained>
std::ostream& operator<<(std::ostream& stream, const ModuleHolder<Contained>& holder) {
  return stream << *holder;
}

}  // namespace kiln::nn

// Declares `Name` as the holder of `NameImpl` (libtorch's TORCH_MODULE).
#define KILN_MODULE_IMPL(Name, Impl)                    \
  class Name : public ::kiln::nn::ModuleHolder<Impl> {  \
   public:                                              \
    using ::kiln::nn::ModuleHolder<Impl>::ModuleHolder; \
    using Impl__ = Impl;                                \
  }
#define KILN_MODULE(Name) KILN_MODULE_IMPL(Name, Name##Impl)
