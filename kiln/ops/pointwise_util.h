#pragma once
// Building blocks for pointwise registry entries: kernels from scalar functors (with dtype
// promotion and Half/BFloat16 computed in float), float64 references, and wrappers that turn
// C++ calls into op calls.
#include <cmath>

#include "kiln/backend/cpu/loops.h"
#include "kiln/core/dispatch.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/registry.h"

namespace kiln::pointwise {

// Input i converted to the dtype the kernel computes in.
inline Tensor as_dtype(const Tensor& t, ScalarType dt) { return t.dtype() == dt ? t : t.to(dt); }

enum class Dtypes { Floating, Numeric, All, Integral };
template <class F>
void visit(Dtypes which, ScalarType t, const char* op, F&& f) {
  switch (which) {
    case Dtypes::Floating: return cpu::visit_floating(t, op, f);
    case Dtypes::Numeric: return cpu::visit_numeric(t, op, f);
    case Dtypes::All: return cpu::visit_all(t, op, f);
    case Dtypes::Integral: return cpu::visit_integral(t, op, f);
  }
}

// out = F(in...) computed in the output's dtype (inputs are converted to it first).
template <class F, size_t N>
KernelFn kernel(const char* op, Dtypes which) {
  return [op, which](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
    const ScalarType dt = out[0].dtype();
    visit(which, dt, op, [&](auto tag) {
      using T = decltype(tag);
      std::array<Tensor, N> conv;
      std::array<const Tensor*, N> ptrs;
      for (size_t k = 0; k < N; ++k) {
        conv[k] = as_dtype(in[k], dt);
        ptrs[k] = &conv[k];
      }
      [&]<size_t... K>(std::index_sequence<K...>) {
        cpu::pointwise<T, std::conditional_t<true, T, std::integral_constant<size_t, K>>...>(
            out[0], F{}, ptrs);
      }(std::make_index_sequence<N>{});
    });
  };
}

// out (bool) = F(a, b) computed in the promoted dtype of the inputs.
template <class F>
KernelFn predicate_kernel(const char* op, Dtypes which) {
  return [op, which](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
    std::vector<Tensor> ins(in.begin(), in.end());
    const ScalarType dt = meta::result_type(ins);
    visit(which, dt, op, [&](auto tag) {
      using T = decltype(tag);
      if (in.size() == 1) {
        Tensor a = as_dtype(in[0], dt);
        cpu::pointwise<bool, T>(out[0], F{}, {&a});
      } else {
        Tensor a = as_dtype(in[0], dt), b = as_dtype(in[1], dt);
        cpu::pointwise<bool, T, T>(out[0], F{}, {&a, &b});
      }
    });
  };
}

// Float64 references: inputs broadcast, converted to double, and mapped element by element.
ReferenceFn reference(double (*f)(double));
ReferenceFn reference(double (*f)(double, double));
ReferenceFn reference(double (*f)(double, double, double));

// Calls an op with tensors and attributes; scalars become wrapped-number tensors.
inline Tensor call(const OpDef& op, std::vector<Tensor> in, const Attrs& attrs = {}) {
  return call_op1(op, std::move(in), attrs);
}

}  // namespace kiln::pointwise
