#pragma once
// CPU element loops shared by pointwise kernels: broadcasting and dim coalescing here; the loops
// themselves (pointwise.inc) are compiled per vector level (Note [ISA dispatch]).
#include <algorithm>
#include <array>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kiln/backend/cpu/parallel.h"
#include "kiln/backend/cpu/vec_math.h"
#include "kiln/backend/scalar.h"
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

// Float types whose loops are worth a copy per vector level.
template <class T>
constexpr bool kIsVectorFloat =
    std::is_same_v<T, float> || std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>;

}  // namespace kiln::cpu

#define KILN_ISA_BODY "kiln/backend/cpu/pointwise.inc"
#include "kiln/backend/cpu/isa_expand.h"
#undef KILN_ISA_BODY

namespace kiln::cpu {

// out[i] = f(in0[i], in1[i], ...) with broadcasting. Out and In... are storage types; f sees
// compute types (float for Half/BFloat16). Loops over 32- and 16-bit floats run at the CPU's
// vector level (Note [ISA dispatch]); others, rarely hot, at the baseline's, which keeps the
// library from growing by a copy of every integer and float64 loop.
template <class Out, class... In, class F>
void pointwise(const Tensor& out, F f, const std::array<const Tensor*, sizeof...(In)>& ins) {
  constexpr size_t N = sizeof...(In);
  const LoopPlan<N> p = plan_loop<N>(out, ins);
  std::array<char*, N + 1> base;
  base[0] = static_cast<char*>(out.data_ptr());
  for (size_t k = 0; k < N; ++k) base[k + 1] = static_cast<char*>(ins[k]->data_ptr());
  constexpr bool kWide = kIsVectorFloat<Out> && (kIsVectorFloat<In> && ...);
  if constexpr (kWide) {
    // Only stores gain from the bfloat16 instructions.
    dispatch_isa<std::is_same_v<Out, BFloat16>>(
        [&](auto isa) { run_pointwise<Out, In...>(isa, p, base, f); });
  } else {
    run_pointwise<Out, In...>(avx2::Isa{}, p, base, f);
  }
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
