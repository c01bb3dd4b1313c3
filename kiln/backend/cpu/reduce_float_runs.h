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
#include <type_traits>

#include "kiln/backend/cpu/vec_math.h"

#define KILN_ISA_BODY "kiln/backend/cpu/reduce_float_runs.inc"
#include "kiln/backend/cpu/isa_expand.h"
#undef KILN_ISA_BODY

namespace kiln::cpu {

// The run kernels at the CPU's vector level: false where the run is too short for them. 16-bit
// runs stay at the AVX2 level: widening 32 of them per step measured slower with AVX-512 (bfloat16
// sum over 1024-element rows: 139 us against 103 us per 1M elements).
template <class T>
bool sum_of_run(const T* p, int64_t n, double& total) {
  if constexpr (std::is_same_v<T, float>) {
    return dispatch_isa([&](auto isa) { return sum_of_run(isa, p, n, total); });
  } else {
    return sum_of_run(avx2::Isa{}, p, n, total);
  }
}
template <bool kMax, class T>
bool extreme_of_run(const T* p, int64_t n, float& result) {
  if constexpr (std::is_same_v<T, float>) {
    return dispatch_isa([&](auto isa) { return extreme_of_run<kMax>(isa, p, n, result); });
  } else {
    return extreme_of_run<kMax>(avx2::Isa{}, p, n, result);
  }
}

}  // namespace kiln::cpu
