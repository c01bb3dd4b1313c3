#pragma once
// The arguments and results of a compiled function, flattened to one variant per C++ argument
// and a list of tensors per result, so that the capture and the cache are written once for
// every signature.
#include <concepts>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/core/error.h"
#include "kiln/core/scalar.h"
#include "kiln/core/tensor.h"

namespace kiln::compiler {

using Arg = std::variant<Tensor, std::vector<Tensor>, int64_t, double, bool, Scalar>;

template <class T>
Arg to_arg(const T& v) {
  using D = std::decay_t<T>;
  if constexpr (std::is_same_v<D, Tensor> || std::is_same_v<D, std::vector<Tensor>> ||
                std::is_same_v<D, bool> || std::is_same_v<D, Scalar>) {
    return Arg(v);
  } else if constexpr (std::is_integral_v<D>) {
    return Arg(static_cast<int64_t>(v));
  } else if constexpr (std::is_floating_point_v<D>) {
    return Arg(static_cast<double>(v));
  } else {
    static_assert(sizeof(D) == 0,
                  "kiln::compile: arguments must be Tensor, std::vector<Tensor>, an integer, a "
                  "floating-point number, bool or Scalar");
  }
}

template <class T>
std::decay_t<T> from_arg(const Arg& a) {
  using D = std::decay_t<T>;
  if constexpr (std::is_same_v<D, Tensor> || std::is_same_v<D, std::vector<Tensor>> ||
                std::is_same_v<D, bool> || std::is_same_v<D, Scalar>) {
    return std::get<D>(a);
  } else if constexpr (std::is_integral_v<D>) {
    return static_cast<D>(std::get<int64_t>(a));
  } else {
    return static_cast<D>(std::get<double>(a));
  }
}

template <class T>
struct is_tuple : std::false_type {};
template <class... T>
struct is_tuple<std::tuple<T...>> : std::true_type {};

// A result as a list of tensors, and back.
template <class R>
std::vector<Tensor> flatten_result(R&& r) {
  using D = std::decay_t<R>;
  if constexpr (std::is_same_v<D, Tensor>) {
    return {std::forward<R>(r)};
  } else if constexpr (std::is_same_v<D, std::vector<Tensor>>) {
    return std::forward<R>(r);
  } else if constexpr (is_tuple<D>::value) {
    return std::apply([](auto&&... t) { return std::vector<Tensor>{Tensor(t)...}; }, r);
  } else {
    static_assert(sizeof(D) == 0,
                  "kiln::compile: the function must return a Tensor, a std::tuple of Tensors or "
                  "a std::vector<Tensor>");
  }
}

template <class R>
R unflatten_result(std::vector<Tensor>&& outs) {
  if constexpr (std::is_same_v<R, Tensor>) {
    return std::move(outs.at(0));
  } else if constexpr (std::is_same_v<R, std::vector<Tensor>>) {
    return std::move(outs);
  } else {
    return [&]<size_t... I>(std::index_sequence<I...>) { return R(std::move(outs.at(I))...); }
    (std::make_index_sequence<std::tuple_size_v<R>>());
  }
}

}  // namespace kiln::compiler
