#pragma once
// What generated kernels include first (cpp_codegen.h): the eager kernels' scalar functors and
// vector math, at the vector width KILN_VEC_BITS that the generated unit defines.
#include <immintrin.h>

#include <concepts>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "kiln/backend/scalar.h"
#include "kiln/compile/codegen/runtime.h"

#define KILN_KERNEL_EXPORT __attribute__((visibility("default")))

namespace kiln_kernels {
using namespace kiln;
#include "kiln/backend/cpu/vec_math.inc"
// The vector forms use vec_math.inc's types: this order, not the alphabetical one.
#include "kiln/backend/cpu/vec_functors.inc"

// f on float vectors: its vector form where it has one, else lane by lane.
template <class F, class... V>
inline fvec vapply(const F& f, V... x) {
  if constexpr (HasVecForm<F, V...>) {
    return VecForm<F>::apply(f, x...);
  } else {
    fvec r;
    for (int l = 0; l < kVec; ++l) r[l] = f(x[l]...);
    return r;
  }
}
// v rounded to the 16-bit float type S and back, as a value stored in S reads.
template <class S>
inline fvec round_to(fvec v) {
  S t[kVec];
  store_vec(t, v);
  return load_vec(t);
}
// A per-thread buffer of at least n floats, aligned to cache lines (vector stores into it must
// not split lines), for values a row kernel keeps between passes. An allocation failure throws
// std::bad_alloc, which Kiln's parallel_for passes on to the caller.
inline float* row_scratch(int64_t n) {
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<float, Free> buffer;
  thread_local int64_t capacity = 0;
  if (n > capacity) {
    buffer.reset();
    const size_t bytes = (static_cast<size_t>(n) * sizeof(float) + 63) / 64 * 64;
    buffer.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
    if (!buffer) throw std::bad_alloc();
    capacity = n;
  }
  return buffer.get();
}
}  // namespace kiln_kernels

using namespace kiln_kernels;
