#pragma once
// kiln::compile: capture a function into a graph of registry ops once, then replay that graph
// on later calls whose guards hold (docs/compile.md, ARCHITECTURE.md §7).
//
//   auto f = kiln::compile([](const Tensor& x, const Tensor& w) { return gelu(x.matmul(w)); });
//   Tensor y = f(x, w);                   // captures, then runs the graph
//   auto m = kiln::compile(model);        // a module's forward; parameters stay graph inputs
//
// The function must be a function of its arguments and of the tensors it captures (a module's
// parameters): it runs once on traced tensors, and later calls replay what it did. Reading a
// value during the capture (item(), data_ptr(), printing), drawing random numbers or making a
// size that depends on values (nonzero, unique, masked_select) makes it run eagerly from then on,
// with a logged reason, or is an error under fullgraph(true).
#include <functional>
#include <memory>
#include <ostream>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/compile/args.h"
#include "kiln/compile/codegen/kernel_cache.h"
#include "kiln/compile/compiled_function.h"
#include "kiln/compile/dynamic.h"
#include "kiln/compile/logs.h"
#include "kiln/compile/options.h"

namespace kiln {

namespace compiler {

std::shared_ptr<CompiledFunction> make_compiled_function(FlatFn fn, CompileOptions options);
// Forgets every captured graph of every compiled function (PyTorch's torch._dynamo.reset()).
void reset();

template <class T>
struct signature_of : signature_of<decltype(&T::operator())> {};
template <class C, class R, class... A>
struct signature_of<R (C::*)(A...) const> {
  using type = R(A...);
};
template <class C, class R, class... A>
struct signature_of<R (C::*)(A...)> {
  using type = R(A...);
};
template <class R, class... A>
struct signature_of<R (*)(A...)> {
  using type = R(A...);
};
template <class R, class... A>
struct signature_of<R(A...)> {
  using type = R(A...);
};

// A module: a std::shared_ptr to a class with forward(), or a holder whose ptr() is one.
template <class T>
concept ModulePointer = requires(const T& m) {
  &std::decay_t<decltype(*m)>::forward;
  m.get();
};
template <class T>
concept ModuleHolder = requires(const T& h) {
  { h.ptr() } -> ModulePointer;
};

template <class R, class... A, class F>
FlatFn flat_fn(F fn) {
  return [fn = std::move(fn)](const std::vector<Arg>& args) mutable {
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return flatten_result(fn(from_arg<A>(args.at(I))...));
    }
    (std::index_sequence_for<A...>());
  };
}

}  // namespace compiler

template <class Signature>
class CompiledFn;

// A compiled function: callable with the original function's signature.
template <class R, class... A>
class CompiledFn<R(A...)> {
 public:
  explicit CompiledFn(std::shared_ptr<compiler::CompiledFunction> impl) : impl_(std::move(impl)) {}
  // A compiled module's forward: `training` (the module's flag) is passed after the arguments as
  // one more bool, which the guards compare like any other, so a graph captured in eval() never
  // replays in train().
  CompiledFn(std::shared_ptr<compiler::CompiledFunction> impl, std::function<bool()> training)
      : impl_(std::move(impl)), training_(std::move(training)) {}
  R operator()(A... args) const {
    return compiler::unflatten_result<R>(impl_->call(flat(args...)));
  }
  // The captured graph, its guards, or why the function runs eagerly, for these arguments.
  compiler::Explanation explain(A... args) const { return impl_->explain(flat(args...)); }
  // Graphs captured so far (each recompile adds one).
  int compilations() const { return impl_->compilations(); }
  const std::shared_ptr<compiler::CompiledFunction>& impl() const { return impl_; }

 private:
  std::vector<compiler::Arg> flat(const A&... args) const {
    std::vector<compiler::Arg> out{compiler::to_arg(args)...};
    if (training_) out.emplace_back(training_());
    return out;
  }

  std::shared_ptr<compiler::CompiledFunction> impl_;
  std::function<bool()> training_;
};

template <class F>
requires(!compiler::ModulePointer<F> &&
         !compiler::ModuleHolder<F>) auto compile(F fn, CompileOptions options = {}) {
  using Signature = typename compiler::signature_of<std::decay_t<F>>::type;
  return [&]<class R, class... A>(std::type_identity<R(A...)>) {
    return CompiledFn<R(A...)>(compiler::make_compiled_function(
        compiler::flat_fn<R, A...>(std::move(fn)), std::move(options)));
  }(std::type_identity<Signature>());
}

namespace compiler {
template <class M>
auto module_forward(std::shared_ptr<M> module) {
  using Signature = typename signature_of<decltype(&M::forward)>::type;
  return [&]<class R, class... A>(std::type_identity<R(A...)>) {
    return std::function<R(A...)>([module](A... args) { return module->forward(args...); });
  }(std::type_identity<Signature>());
}
}  // namespace compiler

// A module's forward (a std::shared_ptr<Impl> or a module holder such as nn::Linear). Its
// parameters and buffers are read at every call, so optimizer steps and load_state_dict need no
// recompile; train() and eval() get separate graphs.
template <class M>
requires compiler::ModulePointer<std::shared_ptr<M>>
auto compile(std::shared_ptr<M> module, CompileOptions options = {}) {
  if constexpr (requires { module->is_training(); }) {
    using Signature = typename compiler::signature_of<decltype(&M::forward)>::type;
    return [&]<class R, class... A>(std::type_identity<R(A...)>) {
      auto forward = [module](A... args, bool) { return module->forward(args...); };
      return CompiledFn<R(A...)>(
          compiler::make_compiled_function(compiler::flat_fn<R, A..., bool>(std::move(forward)),
                                           std::move(options)),
          [module] { return module->is_training(); });
    }(std::type_identity<Signature>());
  } else {
    return compile(compiler::module_forward(std::move(module)), std::move(options));
  }
}
template <class H>
requires compiler::ModuleHolder<H>
auto compile(const H& holder, CompileOptions options = {}) {
  return compile(holder.ptr(), std::move(options));
}

namespace compiler {
// What compile would capture for fn at these arguments: graph, ops, guards or fallback reasons.
template <class F, class... Args>
Explanation explain(F fn, Args&&... args) {
  return kiln::compile(std::move(fn)).explain(std::forward<Args>(args)...);
}
}  // namespace compiler

}  // namespace kiln
