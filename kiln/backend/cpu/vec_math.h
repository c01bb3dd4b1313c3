#pragma once
// Float vectors (GCC/Clang vector extensions) and vector math, once per level of Note [ISA
// dispatch] (cpu_capability.h): kiln::cpu::avx2, ::avx512 and ::avx512_bf16 each hold
// vec_math.inc's types and functions at their width (8 floats for AVX2, 16 for AVX-512).
// Code outside the per-level kernels uses the baseline's, under kiln::cpu.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kiln/core/half.h"

#define KILN_ISA_BODY "kiln/backend/cpu/vec_math.inc"
#include "kiln/backend/cpu/isa_expand.h"
#undef KILN_ISA_BODY

namespace kiln::cpu {

using avx2::abs_vec;
using avx2::exp_scalar;
using avx2::exp_vec;
using avx2::fma_vec;
using avx2::fvec;
using avx2::hsum;
using avx2::ivec;
using avx2::kVec;
using avx2::load_vec;
using avx2::splat;
using avx2::store_vec;
using avx2::uvec;

}  // namespace kiln::cpu
