#pragma once
// Pieces shared by the random op entries: meta functions, samples and the public functions'
// plumbing.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kiln/backend/cpu/loops.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/random.h"
#include "kiln/ops/registry.h"
#include "kiln/ops/samples.h"

namespace kiln::random_util {

// A factory's output: checks the sizes as torch does.
inline std::vector<TensorSpec> factory_spec(const char* op, const SymShape& size, ScalarType dtype,
                                            Device device) {
  for (const SymInt& s : size)
    KILN_CHECK(s >= 0, op, ": Trying to create tensor with negative dimension ", s, ": ",
               SymIntArrayRef(size));
  return {meta::spec(size, dtype, device)};
}

// An in-place op's output: self.
inline std::vector<TensorSpec> inplace_spec(const Tensor& self) {
  TensorSpec s = meta::spec(self.sym_sizes(), self.dtype(), self.device());
  s.inplace_of = 0;
  return {s};
}

// The integers `dtype` holds exactly: [lo, hi] (floating types: up to 2^significand bits).
struct IntRange {
  double lo, hi;
};
inline IntRange exact_integers(ScalarType dtype) {
  IntRange r{0, 1};  // bool
  cpu::visit_all(dtype, "random", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      r = {static_cast<double>(std::numeric_limits<T>::min()),
           static_cast<double>(std::numeric_limits<T>::max())};
    } else if constexpr (!std::is_integral_v<T>) {
      const int digits = std::is_same_v<T, double>  ? 53
                         : std::is_same_v<T, float> ? 24
                         : std::is_same_v<T, Half>  ? 11
                                                    : 8;
      r = {-std::ldexp(1.0, digits), std::ldexp(1.0, digits)};
    }
  });
  return r;
}

inline void check_floating(const char* op, ScalarType dtype) {
  KILN_CHECK(is_floating_point(dtype), op, ": expected a floating point dtype, got ", dtype);
}

// Samples of an in-place fill: contiguous, strided and zero-size self, with `attrs`.
inline std::vector<OpSample> inplace_samples(ScalarType dt, const Attrs& attrs) {
  return {{{samples::make({3, 4}, dt)}, attrs, "matrix", false},
          {{samples::make({4, 3}, dt, -3, 3, true)}, attrs, "strided", false},
          {{samples::make({}, dt)}, attrs, "0-dim", false},
          {{samples::make({0, 3}, dt)}, attrs, "zero-size", false}};
}

// Error samples of a factory whose attrs are `prefix`, size, generator, dtype, device: a negative
// size, and (unless Undefined) an unsupported dtype.
inline std::vector<OpErrorSample> factory_error_samples(ScalarType unsupported,
                                                        std::vector<AttrValue> prefix = {}) {
  auto attrs = [&](SymShape size, ScalarType dt) {
    std::vector<AttrValue> a = prefix;
    a.insert(a.end(), {std::move(size), std::monostate{}, dt, Device(kCPU)});
    return Attrs(std::move(a));
  };
  std::vector<OpErrorSample> s = {{{},
                                   attrs({2, -3}, kFloat32),
                                   "Trying to create tensor with negative dimension -3: [2, -3]",
                                   "negative size"}};
  if (unsupported != ScalarType::Undefined)
    s.push_back({{},
                 attrs({2}, unsupported),
                 detail::str_cat("expected a floating point dtype, got ", unsupported),
                 "integer dtype"});
  return s;
}

// Error samples of an in-place fill whose attributes are `a`: an integer self.
inline OpErrorSample integer_self_error(const Attrs& a) {
  return {
      {samples::make({3}, kInt64)}, a, "expected a floating point dtype, got int64", "integers"};
}

// Samples of a factory whose attrs are `prefix`, size, generator, dtype, device.
inline std::vector<OpSample> factory_samples(ScalarType dt, std::vector<AttrValue> prefix = {}) {
  std::vector<OpSample> out;
  for (const SymShape& size : {SymShape{2, 3}, SymShape{}, SymShape{7}, SymShape{0, 4}}) {
    std::vector<AttrValue> a = prefix;
    a.insert(a.end(), {size, std::monostate{}, dt, Device(kCPU)});
    out.push_back({{}, Attrs(std::move(a)), "size " + Attrs{size}.to_string(), false});
  }
  return out;
}

// Applies options.requires_grad() to a factory's result.
inline Tensor finish(Tensor t, const TensorOptions& options) {
  if (options.requires_grad()) t.requires_grad_(true);
  return t;
}

// The options of a *_like factory: t's dtype and device unless given.
inline TensorOptions like(const Tensor& t, const TensorOptions& o) {
  TensorOptions r = o;
  if (!o.has_dtype()) r = r.dtype(t.dtype());
  if (!o.has_device()) r = r.device(t.device());
  return r;
}

}  // namespace kiln::random_util
