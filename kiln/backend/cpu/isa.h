#pragma once
// The per-level namespaces of Note [ISA dispatch] (cpu_capability.h), their tag types, and
// dispatch_isa, which calls a kernel in the namespace of the current level.
#include "kiln/backend/cpu/cpu_capability.h"

namespace kiln::cpu {

namespace avx2 {
struct Isa {};
}  // namespace avx2
#if defined(__GNUC__) && !defined(__clang__)
namespace avx512 {
struct Isa {};
}  // namespace avx512
namespace avx512_bf16 {
struct Isa {};
}  // namespace avx512_bf16
#else
// Only GCC compiles the wider levels (isa_expand.h); elsewhere every level is the baseline.
namespace avx512 = avx2;
namespace avx512_bf16 = avx2;
#endif

// f(isa) with the tag of the current level's namespace: f calls the kernel as `kernel(isa, ...)`
// and argument-dependent lookup picks that namespace's. Unless kUsesBf16, the avx512_bf16 level
// runs the avx512 code: only kernels that convert bfloat16 gain from it, and a third copy of
// every other one would only grow the library.
template <bool kUsesBf16 = false, class F>
decltype(auto) dispatch_isa(F&& f) {
  switch (cpu_capability()) {
    case CpuCapability::Avx512Bf16:
      if constexpr (kUsesBf16) return f(avx512_bf16::Isa{});
      [[fallthrough]];
    case CpuCapability::Avx512:
      return f(avx512::Isa{});
    case CpuCapability::Avx2:
      break;
  }
  return f(avx2::Isa{});
}

}  // namespace kiln::cpu
