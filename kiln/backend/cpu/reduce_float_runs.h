#pragma once
// Reductions of a contiguous run of floats (or 16-bit floats widened to float) written on
// explicit vectors, for the reducers whose generic lane loop (reduce.h) compiles to worse code:
//  - sum: GCC keeps the generic loop's 64 float lanes in registers only within a loop, so it
//    spills and reloads all of them around its remainder loop and merge on every run.
//  - max / min with NaN propagation: the generic lane reducer needs a compare and a blend per
//    vector for the NaN on top of the max; here the max instruction lets a NaN of the input into
//    the accumulator, where one unordered compare per pair of accumulators catches it before the
//    next step drops it. (Comparing the accumulators, not the input, also keeps GCC from loading
//    every input vector twice.)
#include <algorithm>
#include <cstdint>
#include <limits>

#include "kiln/backend/cpu/vec_math.h"

namespace kiln::cpu {

// The sum of p[0, n) for n >= kSumMinRun: eight vectors of float lanes (each lane adds at most
// n / 64 elements, as the generic lanes do), the rest one vector and then one element at a time;
// the lanes are added in double.
constexpr int64_t kSumVectors = 8;
constexpr int64_t kSumMinRun = kSumVectors * kVec;
template <class T>
double sum_of_run(const T* p, int64_t n) {
  fvec s[kSumVectors];
#pragma GCC unroll 8
  for (int64_t k = 0; k < kSumVectors; ++k) s[k] = load_vec(p + k * kVec);
  int64_t i = kSumMinRun;
  for (; i + kSumMinRun <= n; i += kSumMinRun) {
#pragma GCC unroll 8
    for (int64_t k = 0; k < kSumVectors; ++k) s[k] += load_vec(p + i + k * kVec);
  }
  fvec rest = fvec{};
  for (; i + kVec <= n; i += kVec) rest += load_vec(p + i);
  const fvec all = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7])) + rest;
  double total = 0;
  for (int64_t k = 0; k < kVec; ++k) total += all[k];
  for (; i < n; ++i) total += static_cast<float>(p[i]);
  return total;
}

// The vectors of one step, and the shortest run extreme_of_run takes.
constexpr int64_t kExtremeVectors = 4;
constexpr int64_t kExtremeMinRun = kExtremeVectors * kVec;

// m > v ? m : v (or <): one max/min instruction, which returns v when either is NaN, so a NaN of
// v lands in the result (and a NaN of m is dropped, having been seen the step before).
template <bool kMax>
inline fvec extreme_vec(fvec m, fvec v) {
  if constexpr (kMax) {
    return m > v ? m : v;
  } else {
    return m < v ? m : v;
  }
}

// Lanes where a or b is NaN.
inline ivec unordered(fvec a, fvec b) {
#if defined(__AVX__)
  return reinterpret_cast<ivec>(_mm256_cmp_ps(a, b, _CMP_UNORD_Q));
#else
  return (a != a) | (b != b);
#endif
}

// The max (kMax) or min of p[0, n), NaN if any element is NaN; n >= kExtremeMinRun. The last
// step reads the final kExtremeMinRun elements, overlapping the previous step where n is not a
// multiple: max and min do not mind seeing an element twice.
template <bool kMax, class T>
float extreme_of_run(const T* p, int64_t n) {
  fvec m[kExtremeVectors];
  ivec nan{};
  auto step = [&](const T* q, bool first) {
    fvec v[kExtremeVectors];
    for (int64_t k = 0; k < kExtremeVectors; ++k) v[k] = load_vec(q + k * kVec);
    for (int64_t k = 0; k < kExtremeVectors; ++k)
      m[k] = first ? v[k] : extreme_vec<kMax>(m[k], v[k]);
    for (int64_t k = 0; k < kExtremeVectors; k += 2) nan |= unordered(m[k], m[k + 1]);
  };
  step(p, true);
  int64_t i = kExtremeMinRun;
  for (; i + kExtremeMinRun <= n; i += kExtremeMinRun) step(p + i, false);
  if (i < n) step(p + n - kExtremeMinRun, false);
  for (int64_t k = 1; k < kExtremeVectors; ++k) m[0] = extreme_vec<kMax>(m[0], m[k]);
  float r = m[0][0];
  for (int64_t k = 1; k < kVec; ++k) r = kMax ? std::max(r, m[0][k]) : std::min(r, m[0][k]);
  for (int64_t k = 0; k < kVec; ++k)
    if (nan[k]) return std::numeric_limits<float>::quiet_NaN();
  return r;
}

}  // namespace kiln::cpu
