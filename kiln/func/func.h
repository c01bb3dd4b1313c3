#pragma once
// kiln::func: PyTorch's torch.func in C++ (ARCHITECTURE.md §4-§5). Each transform takes a callable
// and returns one with the callable's arguments:
//
//   auto g = kiln::func::grad(loss)(w, x);                       // d loss / d w
//   auto per_sample = kiln::func::vmap(kiln::func::grad(loss), {std::nullopt, 0})(w, xs);
//   auto h = kiln::func::hessian(f)(x);
//
// Arguments and results are tensor trees (tree.h). argnums are template arguments, as C++ needs
// the result's type: grad(f, argnums<0, 2>) returns a std::tuple of the two gradients. Transforms
// nest to any depth: vmap runs its function under a dispatch mode of its own level, and grad, vjp
// and jvp run on the autograd graph (autodiff.h), keeping their graphs when nested.
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/core/error.h"
#include "kiln/func/autodiff.h"
#include "kiln/func/functional_call.h"
#include "kiln/func/tree.h"
#include "kiln/func/vmap_flat.h"
#include "kiln/ops/creation.h"

namespace kiln::func {

template <size_t... I>
struct Argnums {
  static_assert(sizeof...(I) > 0, "argnums needs at least one argument index");
};
template <size_t... I>
inline constexpr Argnums<I...> argnums{};

namespace detail {

template <class T>
inline constexpr bool is_pair = false;
template <class A, class B>
inline constexpr bool is_pair<std::pair<A, B>> = true;

template <size_t N, class G>
void for_each_index(G&& g) {
  [&]<size_t... K>(std::index_sequence<K...>) { (g(std::integral_constant<size_t, K>{}), ...); }
  (std::make_index_sequence<N>{});
}

template <size_t... I, class Tuple>
std::vector<Tensor> leaves_of(const Tuple& args) {
  std::vector<Tensor> out;
  (Tree<std::tuple_element_t<I, Tuple>>::flatten(std::get<I>(args), out), ...);
  return out;
}

// args with the selected ones rebuilt from `leaves`, in order.
template <size_t... I, class Tuple>
Tuple with_leaves(Tuple args, const std::vector<Tensor>& leaves) {
  const Tensor* it = leaves.data();
  ((std::get<I>(args) = Tree<std::tuple_element_t<I, Tuple>>::unflatten(std::get<I>(args), it)),
   ...);
  return args;
}

// The selected arguments' trees rebuilt from `leaves`: one, or a tuple of several.
template <size_t... I, class Tuple>
auto trees_of(const Tuple& args, const std::vector<Tensor>& leaves) {
  const Tensor* it = leaves.data();
  if constexpr (sizeof...(I) == 1) {
    return (Tree<std::tuple_element_t<I, Tuple>>::unflatten(std::get<I>(args), it), ...);
  } else {
    return std::tuple<std::tuple_element_t<I, Tuple>...>{
        Tree<std::tuple_element_t<I, Tuple>>::unflatten(std::get<I>(args), it)...};
  }
}

template <class R>
const Tensor& value_of(const R& result) {
  if constexpr (is_pair<R>) {
    return result.first;
  } else {
    static_assert(std::is_same_v<R, Tensor>,
                  "the function must return a Tensor, or a std::pair of a Tensor and its aux");
    return result;
  }
}

template <class F, class... A>
using Result = std::decay_t<std::invoke_result_t<const F&, const std::decay_t<A>&...>>;

}  // namespace detail

// The gradient of f's one-element result with respect to the argnums, and the result: with
// has_aux, f returns std::pair(result, aux) and this returns pair(grads, pair(result, aux)).
template <class F, size_t... I>
auto grad_and_value(F f, Argnums<I...>, bool has_aux = false) {
  return [f = std::move(f), has_aux](const auto&... args) {
    using Args = std::tuple<std::decay_t<decltype(args)>...>;
    using R = detail::Result<F, decltype(args)...>;
    KILN_CHECK(has_aux == detail::is_pair<R>, "grad: has_aux is ", has_aux ? "true" : "false",
               ", but the function returns ",
               detail::is_pair<R> ? "a std::pair (result, aux)" : "one result");
    const Args tup(args...);
    std::optional<R> result;
    detail::VjpResult r = detail::vjp_flat(
        "grad",
        [&](const std::vector<Tensor>& leaves) {
          result.emplace(std::apply(f, detail::with_leaves<I...>(tup, leaves)));
          const Tensor& out = detail::value_of(*result);
          detail::check_scalar_output("grad", out);
          return std::vector<Tensor>{out};
        },
        detail::leaves_of<I...>(tup));
    auto grads = detail::trees_of<I...>(tup, r.pullback({ones_like(r.outputs[0])}));
    if constexpr (detail::is_pair<R>)
      return std::make_pair(std::move(grads), std::make_pair(r.outputs[0], result->second));
    else
      return std::make_pair(std::move(grads), r.outputs[0]);
  };
}
template <class F>
auto grad_and_value(F f, bool has_aux = false) {
  return grad_and_value(std::move(f), argnums<0>, has_aux);
}

// The gradient alone (with has_aux: pair(grads, aux)).
template <class F, size_t... I>
auto grad(F f, Argnums<I...> which, bool has_aux = false) {
  return [gv = grad_and_value(std::move(f), which, has_aux)](const auto&... args) {
    auto [grads, value] = gv(args...);
    if constexpr (detail::is_pair<decltype(value)>)
      return std::make_pair(std::move(grads), std::move(value.second));
    else
      return grads;
  };
}
template <class F>
auto grad(F f, bool has_aux = false) {
  return grad(std::move(f), argnums<0>, has_aux);
}

// f's result and the function from a cotangent (shaped as the result) to the gradients of every
// argument, as a tuple: auto [y, pullback] = vjp(f, x, w); auto [gx, gw] = pullback(ct).
template <class F, class... A>
auto vjp(F f, const A&... primals) {
  static_assert((Tree<A>::has_tensors && ...), "vjp: every argument must hold tensors");
  return [&]<size_t... I>(std::index_sequence<I...>) {
    using Args = std::tuple<A...>;
    using R = detail::Result<F, A...>;
    const Args tup(primals...);
    std::optional<R> result;
    detail::VjpResult r = detail::vjp_flat(
        "vjp",
        [&](const std::vector<Tensor>& leaves) {
          result.emplace(std::apply(f, detail::with_leaves<I...>(tup, leaves)));
          return func::flatten(*result);
        },
        detail::leaves_of<I...>(tup));
    R out = func::unflatten(*result, r.outputs);
    auto pullback = [tup, pull = std::move(r.pullback)](const R& cotangent) {
      return detail::with_leaves<I...>(tup, pull(func::flatten(cotangent)));
    };
    return std::make_pair(std::move(out), std::move(pullback));
  }
  (std::index_sequence_for<A...>{});
}

// f's result and its derivative along the tangents (forward mode):
// auto [y, dy] = jvp(f, std::tuple{x}, std::tuple{v}).
template <class F, class... A>
auto jvp(F f, const std::tuple<A...>& primals, const std::tuple<A...>& tangents) {
  static_assert((Tree<A>::has_tensors && ...), "jvp: every primal must hold tensors");
  return [&]<size_t... I>(std::index_sequence<I...>) {
    using R = detail::Result<F, A...>;
    std::optional<R> result;
    detail::JvpResult r = detail::jvp_flat(
        "jvp",
        [&](const std::vector<Tensor>& leaves) {
          result.emplace(std::apply(f, detail::with_leaves<I...>(primals, leaves)));
          return func::flatten(*result);
        },
        detail::leaves_of<I...>(primals), detail::leaves_of<I...>(tangents));
    return std::make_pair(func::unflatten(*result, r.outputs),
                          func::unflatten(*result, r.tangents));
  }
  (std::index_sequence_for<A...>{});
}

// f mapped over a dim of its arguments. in_dims: one per argument (std::nullopt: not mapped; an
// argument holding several tensors maps each along its in_dim); empty: 0 for every argument that
// holds tensors. out_dims: where each result gets the batch (one value: every result's).
// randomness: "error", "same" or "different"; chunk_size: run the batch that many at a time.
template <class F>
auto vmap(F f, std::vector<std::optional<int64_t>> in_dims = {},
          std::vector<int64_t> out_dims = {0}, std::string randomness = "error",
          std::optional<int64_t> chunk_size = std::nullopt) {
  return [f = std::move(f), in_dims = std::move(in_dims), out_dims = std::move(out_dims),
          mode = parse_randomness(randomness), chunk_size](const auto&... args) {
    using Args = std::tuple<std::decay_t<decltype(args)>...>;
    using R = detail::Result<F, decltype(args)...>;
    static_assert(Tree<R>::has_tensors, "vmap: the function must return tensors");
    constexpr size_t N = sizeof...(args);
    KILN_CHECK(in_dims.empty() || in_dims.size() == N, "vmap: in_dims has ", in_dims.size(),
               " entries, but the function is called with ", N, " arguments");
    const Args tup(args...);
    std::vector<Tensor> leaves;
    std::vector<std::optional<int64_t>> dims;
    detail::for_each_index<N>([&](auto k) {
      using T = std::tuple_element_t<k, Args>;
      const std::optional<int64_t> d = in_dims.empty() ? std::optional<int64_t>(0) : in_dims[k];
      if constexpr (Tree<T>::has_tensors) {
        Tree<T>::flatten(std::get<k>(tup), leaves);
        dims.resize(leaves.size(), d);
      } else {
        KILN_CHECK(in_dims.empty() || !d, "vmap: argument ", k(),
                   " holds no tensors, so its in_dim must be std::nullopt, not ", d.value_or(0));
      }
    });
    std::optional<R> result;
    std::vector<Tensor> outs = detail::vmap_flat(
        [&](const std::vector<Tensor>& batched) {
          Args a = tup;
          const Tensor* it = batched.data();
          detail::for_each_index<N>([&](auto k) {
            using T = std::tuple_element_t<k, Args>;
            if constexpr (Tree<T>::has_tensors)
              std::get<k>(a) = Tree<T>::unflatten(std::get<k>(a), it);
          });
          result.emplace(std::apply(f, a));
          return func::flatten(*result);
        },
        leaves, dims, out_dims, mode, chunk_size);
    return func::unflatten(*result, outs);
  };
}

namespace detail {
using JacobianFlatFn = std::vector<Tensor> (*)(const FlatFn&, const std::vector<Tensor>&);

template <size_t... I, class F>
auto jacobian(F f, JacobianFlatFn jacobian_flat) {
  return [f = std::move(f), jacobian_flat](const auto&... args) {
    using Args = std::tuple<std::decay_t<decltype(args)>...>;
    static_assert(std::is_same_v<Result<F, decltype(args)...>, Tensor>,
                  "jacrev/jacfwd: the function must return one Tensor");
    const Args tup(args...);
    auto fn = [&](const std::vector<Tensor>& leaves) {
      return std::vector<Tensor>{std::apply(f, with_leaves<I...>(tup, leaves))};
    };
    return trees_of<I...>(tup, jacobian_flat(fn, leaves_of<I...>(tup)));
  };
}
}  // namespace detail

// The Jacobian of f's one tensor result with respect to the argnums (each of sizes
// result.sizes() + arg.sizes()), by reverse mode: one vjp, vmapped over the result's basis.
template <class F, size_t... I>
auto jacrev(F f, Argnums<I...>) {
  return detail::jacobian<I...>(std::move(f), &detail::jacrev_flat);
}

// The same Jacobian by forward mode: one jvp per input element, vmapped over the input's basis.
template <class F, size_t... I>
auto jacfwd(F f, Argnums<I...>) {
  return detail::jacobian<I...>(std::move(f), &detail::jacfwd_flat);
}

template <class F>
auto jacrev(F f) {
  return jacrev(std::move(f), argnums<0>);
}
template <class F>
auto jacfwd(F f) {
  return jacfwd(std::move(f), argnums<0>);
}

// The Hessian of f's one-element result with respect to one argument: jacfwd of jacrev.
template <class F, size_t I = 0>
auto hessian(F f, Argnums<I> which = argnums<0>) {
  return jacfwd(jacrev(std::move(f), which), which);
}

}  // namespace kiln::func
