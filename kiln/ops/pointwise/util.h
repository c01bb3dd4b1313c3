#pragma once
// Building blocks for pointwise registry entries: kernels from scalar functors (inputs
// converted to one compute dtype, see Note [Native compute dtypes]), float64 references, sample
// helpers, the derivation of in-place entries, and wrappers that turn C++ calls into op calls.
#include <array>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>

#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/loops.h"
#include "kiln/core/dispatch.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/registry.h"
#include "kiln/ops/samples.h"

namespace kiln::pointwise {

// Dtypes the op-table tests run, by kind of op.
inline const std::vector<ScalarType> kFloating = {kFloat64, kFloat32, kBFloat16, kFloat16};
// Float-valued ops also accept integers (promoted to the default float dtype).
inline const std::vector<ScalarType> kFloatingAndInt = {kFloat64, kFloat32, kBFloat16,
                                                        kFloat16, kInt64,   kInt32};
inline const std::vector<ScalarType> kNumeric = {kFloat64, kFloat32, kBFloat16, kFloat16, kInt64,
                                                 kInt32,   kInt16,   kInt8,     kUInt8};
inline const std::vector<ScalarType> kAll = {kFloat64, kFloat32, kBFloat16, kFloat16, kInt64,
                                             kInt32,   kInt16,   kInt8,     kUInt8,   kBool};
inline const std::vector<ScalarType> kIntegral = {kInt64, kInt32, kInt16, kInt8, kUInt8, kBool};

// Input i converted to the dtype the kernel computes in.
inline Tensor as_dtype(const Tensor& t, ScalarType dt) { return t.dtype() == dt ? t : t.to(dt); }

// Note [Native compute dtypes]: loops are instantiated for few element types to keep the build
// small: float, double, int64 and bool. Other dtypes are computed through one of them, which
// is exact for every op here: narrower integers in int64 (then wrapped back), float16 and
// bfloat16 in float32 (which is what their native loops do anyway). Ops where the speed of
// 16-bit floats matters ask for Native16: their loops load and store Half/BFloat16 directly,
// without temporaries. A kernel says which kinds of dtype it supports:
namespace Dtypes {
constexpr unsigned Floating = 1, Integer = 2, Boolean = 4, Native16 = 8;
constexpr unsigned Numeric = Floating | Integer, All = Numeric | Boolean;
constexpr unsigned Integral = Integer | Boolean;
constexpr unsigned HotFloating = Floating | Native16;
}  // namespace Dtypes

// The dtype a kernel supporting W computes dtype t in; an error names the op when W has no
// kind for t.
template <unsigned W>
ScalarType native_dtype(const char* op, ScalarType t) {
  const bool ok = is_floating_point(t) ? (W & Dtypes::Floating)
                  : t == kBool         ? (W & Dtypes::Boolean)
                                       : (W & Dtypes::Integer);
  KILN_CHECK(ok, op, ": not supported for dtype ", t);
  if (t == kFloat16 || t == kBFloat16) return (W & Dtypes::Native16) ? t : kFloat32;
  return is_integral(t) ? kInt64 : t;
}

// Calls f with a value of the C++ type of the native dtype t; only W's types instantiate f.
template <unsigned W, class F>
void visit_native(ScalarType t, F&& f) {
  if constexpr ((W & Dtypes::Floating) != 0) {
    if (t == kFloat32) return f(float{});
    if (t == kFloat64) return f(double{});
  }
  if constexpr ((W & Dtypes::Floating) != 0 && (W & Dtypes::Native16) != 0) {
    if (t == kFloat16) return f(Half{});
    if (t == kBFloat16) return f(BFloat16{});
  }
  if constexpr ((W & Dtypes::Integer) != 0) {
    if (t == kInt64) return f(int64_t{});
  }
  if constexpr ((W & Dtypes::Boolean) != 0) {
    if (t == kBool) return f(bool{});
  }
  KILN_FAIL("internal: visit_native: dtype ", t, " is not a native compute dtype");
}

// body(target) writes the result in dtype `native`: into `out` itself when that is its dtype,
// else into a temporary that is then converted into `out`.
template <class Body>
void write_as(const Tensor& out, ScalarType native, Body body) {
  if (out.dtype() == native) return body(out);
  Tensor tmp = empty(out.sym_sizes(), TensorOptions(native).device(out.device()));
  body(tmp);
  cpu::copy(out, tmp);
}

// out = f(in...) computed in the native dtype of `compute` (inputs converted to it first). Out
// fixes the output's storage type (bool for predicates); by default it is the compute type.
template <size_t N, unsigned W, class Out = void, class F>
void run(const char* op, ScalarType compute, const std::vector<Tensor>& in, const Tensor& out,
         F f) {
  const ScalarType native = native_dtype<W>(op, compute);
  auto body = [&](const Tensor& target) {
    visit_native<W>(native, [&](auto tag) {
      using T = decltype(tag);
      using O = std::conditional_t<std::is_void_v<Out>, T, Out>;
      std::array<Tensor, N> conv;
      std::array<const Tensor*, N> ptrs;
      for (size_t k = 0; k < N; ++k) {
        conv[k] = as_dtype(in[k], native);
        ptrs[k] = &conv[k];
      }
      [&]<size_t... K>(std::index_sequence<K...>) {
        cpu::pointwise<O, std::conditional_t<true, T, std::integral_constant<size_t, K>>...>(
            target, f, ptrs);
      }
      (std::make_index_sequence<N>{});
    });
  };
  if constexpr (std::is_void_v<Out>) {
    write_as(out, native, body);
  } else {
    body(out);
  }
}

// out = F{}(in...) computed in the output's dtype.
template <class F, size_t N, unsigned W>
KernelFn kernel(const char* op) {
  return [op](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
    run<N, W>(op, out[0].dtype(), in, out[0], F{});
  };
}
// out = make(attrs)(in...) for functors with parameters (leaky_relu's slope, ...).
template <size_t N, unsigned W, class Make>
KernelFn kernel_with(const char* op, Make make) {
  return [op, make](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& attrs) {
    run<N, W>(op, out[0].dtype(), in, out[0], make(attrs));
  };
}
// out (bool) = F{}(in...) computed in the promoted dtype of the inputs.
template <class F, size_t N, unsigned W>
KernelFn predicate_kernel(const char* op) {
  return [op](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
    run<N, W, bool>(op, meta::result_type(in), in, out[0], F{});
  };
}

// Note [Pointwise lowerings]: the compiler's expression of what `run` computes, built next to
// the kernel from the same functor and dtype rules: inputs converted to the native compute dtype
// (16-bit floats computed in float32, as their loops do), then the functor; the result has dtype
// `result` (Undefined: the compute dtype). Null when W does not support `compute`: the call then
// runs as an extern call and its kernel reports the error.
template <unsigned W>
lowering::ExprPtr apply_expr(const char* functor, std::vector<double> params, size_t n,
                             ScalarType compute, ScalarType result = ScalarType::Undefined) {
  const bool ok = is_floating_point(compute) ? (W & Dtypes::Floating)
                  : compute == kBool         ? (W & Dtypes::Boolean)
                                             : (W & Dtypes::Integer);
  if (!ok || compute == ScalarType::Undefined) return nullptr;
  ScalarType c = is_integral(compute) ? kInt64 : compute;
  if (c == kFloat16 || c == kBFloat16) c = kFloat32;
  std::vector<lowering::ExprPtr> args;
  for (size_t k = 0; k < n; ++k) args.push_back(lowering::input(static_cast<int>(k), c));
  return lowering::call(functor, std::move(params), std::move(args),
                        result == ScalarType::Undefined ? c : result);
}
// The lowering of kernel<F, N, W>.
template <class F, size_t N, unsigned W>
lowering::Lowering lower(const char* functor) {
  return lowering::Lowering::of(functor, [functor](const lowering::Call& c) {
    return apply_expr<W>(functor, {}, N, c.output);
  });
}
// The lowering of kernel_with<N, W>(op, make), make returning a functor of scalar.h.
template <size_t N, unsigned W, class Make>
lowering::Lowering lower_with(const char* functor, Make make) {
  return lowering::Lowering::of(functor, [functor, make](const lowering::Call& c) {
    return apply_expr<W>(functor, lowering::params_of(make(c.attrs)), N, c.output);
  });
}
// The lowering of predicate_kernel<F, N, W>.
template <size_t N, unsigned W>
lowering::Lowering lower_predicate(const char* functor) {
  return lowering::Lowering::of(functor, [functor](const lowering::Call& c) {
    return apply_expr<W>(functor, {}, N, meta::result_type(c.inputs), kBool);
  });
}

// Integer division by zero is an error (as PyTorch's ZeroDivisionError), never a trap.
void check_nonzero_divisor(const char* op, const Tensor& divisor);

// Float64 references: inputs (undefined ones skipped) broadcast, converted to double, and
// mapped element by element; f receives the element's values in input order.
using ElementFn = std::function<double(const double* values, const Attrs& attrs)>;
ReferenceFn reference_fn(ElementFn f);
ReferenceFn reference(double (*f)(double));
ReferenceFn reference(double (*f)(double, double));
ReferenceFn reference(double (*f)(double, double, double));

// Backward results, one per input.
template <class... G>
std::vector<Tensor> grads(G&&... g) {
  return std::vector<Tensor>{std::forward<G>(g)...};
}

// samples::binary plus a Python-number (wrapped scalar) second operand.
std::vector<OpSample> binary_samples(ScalarType dt, double low = -3, double high = 3,
                                     double low2 = -3, double high2 = 3);
// Error samples of an op with n operands and attributes `attrs`: operands of shapes [2, 3], [4],
// [4]... that do not broadcast (when n > 1), and operands of dtype `unsupported` (unless
// Undefined), which the kernel rejects (meta tensors pass: in_meta is false).
OpErrorSample broadcast_error(size_t n, const Attrs& attrs = {});
OpErrorSample dtype_error(size_t n, ScalarType unsupported, const Attrs& attrs = {});
ErrorSampleFn errors(size_t n, ScalarType unsupported, const Attrs& attrs = {});

// Samples: every sample with `attrs`; and input `k` moved away from zero (|x| >= 0.5, or >= 1
// for integers) in place, for divisors.
std::vector<OpSample> with_attrs(std::vector<OpSample> samples, const Attrs& attrs);
std::vector<OpSample> nonzero_input(std::vector<OpSample> samples, size_t k);

// A float-valued unary op computed by F (integer inputs promote to the default float dtype),
// with samples in [low, high); the caller chains .backward() and .reference().
template <class F, unsigned W = Dtypes::Floating>
OpDef& unary_float_op(const char* name, const char* functor, double low, double high) {
  return register_op(name)
      .schema(std::string(name) + "(Tensor self) -> Tensor")
      .meta(meta::unary_float)
      .cpu(kernel<F, 1, W>(name))
      .samples([low, high](ScalarType dt) { return samples::unary(dt, low, high); })
      .dtypes(kFloatingAndInt)
      .lowering(lower<F, 1, W>(functor));
}

// Registers "<name>_" for each listed out-of-place entry (which must already be registered:
// list them after their entries in the same file). The in-place entry reuses the entry's
// kernel, backward and reference; its meta checks that the result fits input 0 (shape, and a
// dtype it can be cast to) and its samples are the entry's that do.
bool register_inplace(std::initializer_list<const char*> names);

// Calls an op with tensors and attributes.
inline Tensor call(const OpDef& op, std::vector<Tensor> in, const Attrs& attrs = {}) {
  return call_op1(op, std::move(in), attrs);
}

}  // namespace kiln::pointwise

// KILN_POINTWISE_ENTRY unary_float_op<...>(...).backward(...);  registers an entry built by a
// helper, at static-initialisation time (as KILN_REGISTER_OP does for plain entries).
#define KILN_POINTWISE_ENTRY \
  [[maybe_unused]] static const ::kiln::OpDef& KILN_OP_CONCAT(kiln_pointwise_, __COUNTER__) =
