// No include guard: each inclusion compiles the file named by KILN_ISA_BODY once per level of
// Note [ISA dispatch] (cpu_capability.h), inside that level's namespace and under its target
// options. The body sees KILN_VEC_BITS (256 or 512) and KILN_VEC_BF16 (1 where the AVX512_BF16
// conversions may be used); it includes no headers (the file that expands it includes what it
// needs first), only other bodies, and the tag type `Isa` names its namespace's level. GCC does
// not define __AVX512F__ and the like inside a `#pragma GCC target` region of C++, hence these
// macros.
#ifndef KILN_ISA_BODY
#error "isa_expand.h: define KILN_ISA_BODY as the file to compile per level"
#endif
#include "kiln/backend/cpu/isa.h"

#if defined(__GNUC__) && !defined(__clang__)
#define KILN_ISA_NAMESPACE avx2
#define KILN_ISA_TARGETS "avx2,fma,f16c,bmi,bmi2,lzcnt,popcnt"
#define KILN_VEC_BITS 256
#define KILN_VEC_BF16 0
#include "kiln/backend/cpu/isa_expand_level.h"

#define KILN_ISA_NAMESPACE avx512
#define KILN_ISA_TARGETS \
  "avx2,fma,f16c,bmi,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512vl,avx512dq,prefer-vector-width=512"
#define KILN_VEC_BITS 512
#define KILN_VEC_BF16 0
#include "kiln/backend/cpu/isa_expand_level.h"

#define KILN_ISA_NAMESPACE avx512_bf16
#define KILN_ISA_TARGETS                                                               \
  "avx2,fma,f16c,bmi,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16," \
  "avx512vnni,prefer-vector-width=512"
#define KILN_VEC_BITS 512
#define KILN_VEC_BF16 1
#include "kiln/backend/cpu/isa_expand_level.h"

#else
// Other compilers: the baseline level only, at the width the command line gives.
#if defined(__AVX2__)
#define KILN_VEC_BITS 256
#else
#define KILN_VEC_BITS 128
#endif
#define KILN_VEC_BF16 0
namespace kiln::cpu::avx2 {
#include KILN_ISA_BODY
}  // namespace kiln::cpu::avx2
#undef KILN_VEC_BITS
#undef KILN_VEC_BF16
#endif
