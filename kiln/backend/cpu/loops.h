#pragma once
// CPU element loops shared by pointwise kernels: broadcasting, dim coalescing, a contiguous fast
// path the compiler vectorises (or explicit vectors for functors with a VecForm), and OpenMP
// parallelism for large tensors.
#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kiln/backend/cpu/parallel.h"
#include "kiln/backend/cpu/vec_functors.h"
#include "kiln/core/error.h"
#include "kiln/core/tensor.h"

namespace kiln::cpu {

// Half and BFloat16 are stored as 16 bits and computed in float.
template <class T>
using compute_t =
    std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

// The iteration space of one output and N inputs broadcast to it, after merging dims that are
// contiguous in every operand. Strides are in elements; a broadcast dim has stride 0.
template <size_t N>
struct LoopPlan {
  std::vector<int64_t> sizes;                       // innermost last
  std::vector<std::array<int64_t, N + 1>> strides;  // per dim: out, in0, in1, ...
  int64_t numel = 1;
  bool contiguous = true;  // every operand dense and in order (no broadcasting)
};

template <size_t N>
LoopPlan<N> plan_loop(const Tensor& out, const std::array<const Tensor*, N>& ins) {
  LoopPlan<N> p;
  const int64_t nd = out.dim();
  const auto& osz = out.impl()->sizes();
  // Size-1 dims are dropped, and dim d merges into the one before when contiguous with it for
  // every operand. Broadcast dims of an input get stride 0.
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t size = osz[d];
    p.numel *= size;
    if (size == 1) continue;
    std::array<int64_t, N + 1> stride;
    stride[0] = out.impl()->strides()[d];
    for (size_t k = 0; k < N; ++k) {
      const TensorImpl& t = *ins[k]->impl();
      const int64_t td = d - (nd - t.dim());
      stride[k + 1] = td >= 0 && t.sizes()[td] != 1 ? t.strides()[td] : 0;
    }
    if (!p.sizes.empty()) {
      bool mergeable = true;
      auto& prev = p.strides.back();
      for (size_t k = 0; k <= N; ++k)
        if (prev[k] != stride[k] * size) mergeable = false;
      if (mergeable) {
        p.sizes.back() *= size;
        prev = stride;
        continue;
      }
    }
    p.sizes.push_back(size);
    p.strides.push_back(stride);
  }
  if (p.sizes.empty()) {
    p.sizes.push_back(1);
    p.strides.push_back({});
    p.strides.back().fill(1);
  }
  p.contiguous = p.sizes.size() == 1;
  for (size_t k = 0; k <= N && p.contiguous; ++k)
    if (p.strides[0][k] != 1) p.contiguous = false;
  return p;
}

// Calls body(ptrs, n, inner_strides) over runs of the innermost dim, in parallel when large.
// ptrs[k] points at the first element of operand k for that run.
template <size_t N, class Body>
void for_each_run(const LoopPlan<N>& p, const std::array<char*, N + 1>& base,
                  const std::array<size_t, N + 1>& elsize, Body body) {
  const int64_t inner = p.sizes.back();
  std::array<int64_t, N + 1> inner_stride;
  for (size_t k = 0; k <= N; ++k) inner_stride[k] = p.strides.back()[k];
  const int64_t outer = p.numel / (inner == 0 ? 1 : inner);
  if (p.numel == 0) return;
  const int64_t outer_dims = static_cast<int64_t>(p.sizes.size()) - 1;
  // Byte steps per outer dim and operand.
  std::vector<std::array<int64_t, N + 1>> step(outer_dims);
  for (int64_t d = 0; d < outer_dims; ++d)
    for (size_t k = 0; k <= N; ++k) step[d][k] = p.strides[d][k] * static_cast<int64_t>(elsize[k]);
  auto run_range = [&](int64_t begin, int64_t end) {
    // The multi-index of run `begin`, then odometer steps from run to run: runs can be short
    // (a transposed copy's rows), and a division per dim per run would cost more than the run.
    std::vector<int64_t> index(outer_dims);
    std::array<char*, N + 1> ptr = base;
    int64_t rem = begin;
    for (int64_t d = outer_dims - 1; d >= 0; --d) {
      index[d] = rem % p.sizes[d];
      rem /= p.sizes[d];
      for (size_t k = 0; k <= N; ++k) ptr[k] += index[d] * step[d][k];
    }
    for (int64_t r = begin; r < end; ++r) {
      body(ptr, inner, inner_stride);
      for (int64_t d = outer_dims - 1; d >= 0; --d) {
        for (size_t k = 0; k <= N; ++k) ptr[k] += step[d][k];
        if (++index[d] < p.sizes[d]) break;
        for (size_t k = 0; k <= N; ++k) ptr[k] -= p.sizes[d] * step[d][k];
        index[d] = 0;
      }
    }
  };
  if (p.numel >= kParallelGrain && outer > 1) {
    parallel_for(0, outer, std::max<int64_t>(1, kParallelGrain / inner), run_range);
  } else {
    run_range(0, outer);
  }
}

// Whether f runs as vectors (VecForm) on operands of storage type Out, In...: every operand of
// one 16/32-bit float type (bfloat16 only, for the forms that say so).
template <class Out, class F, class... In>
constexpr bool kVectorised = (std::is_same_v<Out, float> || std::is_same_v<Out, BFloat16> ||
                              std::is_same_v<Out, Half>)&&(std::is_same_v<In, Out>&&...) &&
                             HasVecForm<F, std::conditional_t<true, fvec, In>...> &&
                             (!kBFloat16Only<F> || std::is_same_v<Out, BFloat16>);

// out[i * stride[0]] = f(in[0][i * stride[1]], ...) for i < n, kVec elements at a time: straight
// loads where every stride is 1, else (and for the tail) through a gathered, zero-padded block,
// so that every element sees the same arithmetic whatever the layout.
template <class T, size_t N, class F>
void vectorised_run(const F& f, const std::array<char*, N + 1>& ptr, int64_t n,
                    const std::array<int64_t, N + 1>& stride) {
  T* out = reinterpret_cast<T*>(ptr[0]);
  std::array<const T*, N> in;
  for (size_t k = 0; k < N; ++k) in[k] = reinterpret_cast<const T*>(ptr[k + 1]);
  auto apply_to = [&](const std::array<fvec, N>& x) {
    return [&]<size_t... K>(std::index_sequence<K...>) { return VecForm<F>::apply(f, x[K]...); }
    (std::make_index_sequence<N>{});
  };
  auto apply = [&](const std::array<const T*, N>& src) {
    std::array<fvec, N> x;
    for (size_t k = 0; k < N; ++k) x[k] = load_vec(src[k]);
    return apply_to(x);
  };
  int64_t i = 0;
  bool unit = true;
  for (int64_t s : stride) unit = unit && s == 1;
  if (unit) {
    // Two independent vectors per step: the math is one long dependency chain, and the
    // out-of-order window holds too few steps to overlap them otherwise.
    for (; i + 2 * kVec <= n; i += 2 * kVec) {
      std::array<fvec, N> x0, x1;
      for (size_t k = 0; k < N; ++k) load_pair(in[k] + i, x0[k], x1[k]);
      store_pair(out + i, apply_to(x0), apply_to(x1));
    }
    for (; i + kVec <= n; i += kVec) {
      std::array<const T*, N> src;
      for (size_t k = 0; k < N; ++k) src[k] = in[k] + i;
      store_vec(out + i, apply(src));
    }
  }
  for (; i < n; i += kVec) {
    const int64_t m = std::min<int64_t>(kVec, n - i);
    T block[N][kVec] = {}, result[kVec];
    std::array<const T*, N> src;
    for (size_t k = 0; k < N; ++k) {
      for (int64_t j = 0; j < m; ++j) block[k][j] = in[k][(i + j) * stride[k + 1]];
      src[k] = block[k];
    }
    store_vec(result, apply(src));
    for (int64_t j = 0; j < m; ++j) out[(i + j) * stride[0]] = result[j];
  }
}

// out[i] = f(in0[i], in1[i], ...) with broadcasting. Out and In... are storage types; f sees
// compute types (float for Half/BFloat16).
template <class Out, class... In, class F>
void pointwise(const Tensor& out, F f, const std::array<const Tensor*, sizeof...(In)>& ins) {
  constexpr size_t N = sizeof...(In);
  LoopPlan<N> p = plan_loop<N>(out, ins);
  std::array<char*, N + 1> base;
  base[0] = static_cast<char*>(out.data_ptr());
  for (size_t k = 0; k < N; ++k) base[k + 1] = static_cast<char*>(ins[k]->data_ptr());
  std::array<size_t, N + 1> elsize{sizeof(Out), sizeof(In)...};
  auto apply = [&](const std::array<char*, N + 1>& ptr, int64_t i, const auto& stride) {
    return [&]<size_t... K>(std::index_sequence<K...>) {
      return f(static_cast<compute_t<In>>(
          reinterpret_cast<const In*>(ptr[K + 1])[i * stride[K + 1]])...);
    }
    (std::index_sequence_for<In...>{});
  };
  if constexpr (kVectorised<Out, F, In...>) {
    if (p.contiguous) {
      auto dense = [&](int64_t begin, int64_t end) {
        std::array<char*, N + 1> ptr;
        for (size_t k = 0; k <= N; ++k) ptr[k] = base[k] + begin * sizeof(Out);
        std::array<int64_t, N + 1> unit;
        unit.fill(1);
        vectorised_run<Out, N>(f, ptr, end - begin, unit);
      };
      if (p.numel >= kParallelGrain) {
        parallel_for(0, p.numel, kParallelGrain, dense);
      } else {
        dense(0, p.numel);
      }
    } else {
      for_each_run<N>(p, base, elsize,
                      [&](const std::array<char*, N + 1>& ptr, int64_t n,
                          const std::array<int64_t, N + 1>& stride) {
                        vectorised_run<Out, N>(f, ptr, n, stride);
                      });
    }
    return;
  }
  if (p.contiguous) {
    // Dense: a flat loop per chunk, which the compiler vectorises.
    auto dense = [&](int64_t begin, int64_t end) {
      Out* o = reinterpret_cast<Out*>(base[0]);
      [&]<size_t... K>(std::index_sequence<K...>) {
        [[maybe_unused]] std::array<const void*, N> in_ptrs{base[K + 1]...};
        for (int64_t i = begin; i < end; ++i)
          o[i] = static_cast<Out>(
              f(static_cast<compute_t<In>>(static_cast<const In*>(in_ptrs[K])[i])...));
      }
      (std::index_sequence_for<In...>{});
    };
    if (p.numel >= kParallelGrain) {
      parallel_for(0, p.numel, kParallelGrain, dense);
    } else {
      dense(0, p.numel);
    }
    return;
  }
  for_each_run<N>(p, base, elsize,
                  [&](const std::array<char*, N + 1>& ptr, int64_t n,
                      const std::array<int64_t, N + 1>& stride) {
                    Out* o = reinterpret_cast<Out*>(ptr[0]);
                    for (int64_t i = 0; i < n; ++i)
                      o[i * stride[0]] = static_cast<Out>(apply(ptr, i, stride));
                  });
}

template <class Out, class In, class F>
void unary_loop(const Tensor& out, const Tensor& in, F f) {
  pointwise<Out, In>(out, f, {&in});
}
template <class Out, class A, class B, class F>
void binary_loop(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  pointwise<Out, A, B>(out, f, {&a, &b});
}
template <class Out, class A, class B, class C, class F>
void ternary_loop(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c, F f) {
  pointwise<Out, A, B, C>(out, f, {&a, &b, &c});
}

// Dtype visitors restricted to what a kernel supports; `f` receives a value of the C++ type.
template <class F>
void visit_floating(ScalarType t, const char* op, F&& f) {
  switch (t) {
    case kFloat32:
      return f(float{});
    case kFloat64:
      return f(double{});
    case kFloat16:
      return f(Half{});
    case kBFloat16:
      return f(BFloat16{});
    default:
      KILN_FAIL(op, ": not supported for dtype ", t, " (expected a floating dtype)");
  }
}
// Calls f with the C++ type of integer dtype t (bool excluded); false when t is not one.
template <class F>
bool visit_integer(ScalarType t, F& f) {
  switch (t) {
    case kUInt8:
      f(uint8_t{});
      return true;
    case kInt8:
      f(int8_t{});
      return true;
    case kInt16:
      f(int16_t{});
      return true;
    case kInt32:
      f(int32_t{});
      return true;
    case kInt64:
      f(int64_t{});
      return true;
    default:
      return false;
  }
}
template <class F>
void visit_numeric(ScalarType t, const char* op, F&& f) {  // every dtype but bool
  KILN_CHECK(t != kBool, op, ": not supported for dtype bool");
  if (!visit_integer(t, f)) visit_floating(t, op, f);
}
template <class F>
void visit_all(ScalarType t, const char* op, F&& f) {
  if (t == kBool) return f(bool{});
  visit_numeric(t, op, f);
}
template <class F>
void visit_integral(ScalarType t, const char* op, F&& f) {  // bitwise ops: ints and bool
  if (t == kBool) return f(bool{});
  if (!visit_integer(t, f))
    KILN_FAIL(op, ": not supported for dtype ", t, " (expected an integral dtype)");
}

}  // namespace kiln::cpu
