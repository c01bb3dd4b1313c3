#pragma once
// The argument and result types the transforms take apart into tensors and put back together:
// Tensor, std::vector<Tensor>, std::map<std::string, Tensor>, OrderedDict<std::string, Tensor>,
// and std::pair / std::tuple of these (PyTorch's pytrees, as far as C++ types go). Any other
// type (a number, a flag) has no tensors and passes through.
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/nn/ordered_dict.h"

namespace kiln::func {

template <class T>
struct Tree {
  static constexpr bool has_tensors = false;
  static void flatten(const T&, std::vector<Tensor>&) {}
  static T unflatten(const T& like, const Tensor*&) { return like; }
};

template <>
struct Tree<Tensor> {
  static constexpr bool has_tensors = true;
  static void flatten(const Tensor& t, std::vector<Tensor>& out) { out.push_back(t); }
  static Tensor unflatten(const Tensor&, const Tensor*& it) { return *it++; }
};

template <>
struct Tree<std::vector<Tensor>> {
  static constexpr bool has_tensors = true;
  static void flatten(const std::vector<Tensor>& v, std::vector<Tensor>& out) {
    out.insert(out.end(), v.begin(), v.end());
  }
  static std::vector<Tensor> unflatten(const std::vector<Tensor>& like, const Tensor*& it) {
    std::vector<Tensor> v(it, it + like.size());
    it += like.size();
    return v;
  }
};

template <>
struct Tree<std::map<std::string, Tensor>> {
  using Map = std::map<std::string, Tensor>;
  static constexpr bool has_tensors = true;
  static void flatten(const Map& m, std::vector<Tensor>& out) {
    for (const auto& [k, v] : m) out.push_back(v);
  }
  static Map unflatten(const Map& like, const Tensor*& it) {
    Map m;
    for (const auto& [k, v] : like) m.emplace(k, *it++);
    return m;
  }
};

template <>
struct Tree<OrderedDict<std::string, Tensor>> {
  using Dict = OrderedDict<std::string, Tensor>;
  static constexpr bool has_tensors = true;
  static void flatten(const Dict& d, std::vector<Tensor>& out) {
    for (const auto& item : d.items()) out.push_back(item.value());
  }
  static Dict unflatten(const Dict& like, const Tensor*& it) {
    Dict d;
    for (const auto& item : like.items()) d.insert(item.key(), *it++);
    return d;
  }
};

template <class... T>
struct Tree<std::tuple<T...>> {
  static constexpr bool has_tensors = (Tree<T>::has_tensors || ...);
  static void flatten(const std::tuple<T...>& t, std::vector<Tensor>& out) {
    std::apply([&](const auto&... e) { (Tree<std::decay_t<decltype(e)>>::flatten(e, out), ...); },
               t);
  }
  static std::tuple<T...> unflatten(const std::tuple<T...>& like, const Tensor*& it) {
    // Braced initialisation evaluates left to right, in the order flatten wrote.
    return std::apply(
        [&](const auto&... e) { return std::tuple<T...>{Tree<T>::unflatten(e, it)...}; }, like);
  }
};

template <class A, class B>
struct Tree<std::pair<A, B>> {
  static constexpr bool has_tensors = Tree<A>::has_tensors || Tree<B>::has_tensors;
  static void flatten(const std::pair<A, B>& p, std::vector<Tensor>& out) {
    Tree<A>::flatten(p.first, out);
    Tree<B>::flatten(p.second, out);
  }
  static std::pair<A, B> unflatten(const std::pair<A, B>& like, const Tensor*& it) {
    A a = Tree<A>::unflatten(like.first, it);
    return {std::move(a), Tree<B>::unflatten(like.second, it)};
  }
};

template <class T>
std::vector<Tensor> flatten(const T& tree) {
  std::vector<Tensor> out;
  Tree<T>::flatten(tree, out);
  return out;
}
template <class T>
T unflatten(const T& like, const std::vector<Tensor>& leaves) {
  const Tensor* it = leaves.data();
  return Tree<T>::unflatten(like, it);
}

}  // namespace kiln::func
