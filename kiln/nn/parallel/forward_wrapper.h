#pragma once
// ForwardWrapper: a module that wraps another and whose forward is the wrapped module's, run
// between its base's before_forward() and after_forward(outputs): how DistributedDataParallel
// and fully_shard see each forward, C++ modules having no forward hooks.
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"

namespace kiln::nn::parallel {

namespace detail {
// The tensors in a forward's result, for finding the parameters it did not use.
template <class T>
void collect_tensors(const T&, std::vector<Tensor>&) {}
inline void collect_tensors(const Tensor& t, std::vector<Tensor>& out) { out.push_back(t); }
inline void collect_tensors(const std::vector<Tensor>& v, std::vector<Tensor>& out) {
  out.insert(out.end(), v.begin(), v.end());
}
template <class A, class B>
void collect_tensors(const std::pair<A, B>& p, std::vector<Tensor>& out);
template <class... T>
void collect_tensors(const std::tuple<T...>& t, std::vector<Tensor>& out) {
  std::apply([&](const auto&... item) { (collect_tensors(item, out), ...); }, t);
}
template <class A, class B>
void collect_tensors(const std::pair<A, B>& p, std::vector<Tensor>& out) {
  collect_tensors(p.first, out);
  collect_tensors(p.second, out);
}

template <class T>
std::shared_ptr<Module> module_ptr(const std::shared_ptr<T>& m) {
  return m;
}
template <class T>
std::shared_ptr<Module> module_ptr(const ModuleHolder<T>& m) {
  return m.ptr();
}
}  // namespace detail

// Base: a Module with a constructor (std::shared_ptr<Module>, const Options&) and protected
// before_forward() and after_forward(const std::vector<Tensor>&). M: a module holder or a
// std::shared_ptr to a module.
template <class Base, class M>
class ForwardWrapper : public Base {
 public:
  template <class Options>
  ForwardWrapper(M module, const Options& options)
      : Base(detail::module_ptr(module), options), module_(std::move(module)) {}

  template <class... Args>
  auto forward(Args&&... args) {
    this->before_forward();
    auto out = module_->forward(std::forward<Args>(args)...);
    std::vector<Tensor> tensors;
    detail::collect_tensors(out, tensors);
    this->after_forward(tensors);
    return out;
  }
  template <class... Args>
  auto operator()(Args&&... args) {
    return forward(std::forward<Args>(args)...);
  }

  M& module() { return module_; }

 private:
  M module_;
};

}  // namespace kiln::nn::parallel
