#pragma once
// The x86 vector instruction set the CPU kernels run with.
//
// Note [ISA dispatch]: libkiln is built for a portable baseline (x86-64-v3: AVX2, FMA, F16C),
// and its vector kernels are compiled once more for each wider level, so that one binary runs
// on any x86-64-v3 machine and uses AVX-512 where the CPU has it. A kernel is written once, in a
// file of its own ("kiln/backend/cpu/*.inc") over the vector types of vec_math.inc; isa_expand.h
// compiles that file into one namespace per level (kiln::cpu::avx2, ::avx512, ::avx512_bf16),
// each under its own `#pragma GCC target`, and dispatch_isa() calls the namespace of the level
// chosen at start-up. Each namespace has a tag type `Isa`; the kernels take it as their first
// parameter, so that the call dispatch_isa(f) makes, f(isa), finds the right one by
// argument-dependent lookup.
#include <optional>
#include <string_view>

namespace kiln::cpu {

// Ordered: each level includes the ones before it.
enum class CpuCapability : int {
  Avx2 = 0,        // AVX2, FMA, F16C (x86-64-v3): the baseline
  Avx512 = 1,      // AVX-512 F, BW, VL, DQ, with 512-bit vectors
  Avx512Bf16 = 2,  // AVX-512 with the bfloat16 conversions (AVX512_BF16) and VNNI
};

// The level the kernels use: the best this CPU supports, lowered by the environment variable
// KILN_CPU_CAPABILITY=default|avx2|avx512|avx512_bf16 (as ATen's ATEN_CPU_CAPABILITY; default
// is avx2, the baseline) or by set_cpu_capability.
CpuCapability cpu_capability();
// The best level this CPU (and this build: only GCC builds compile the AVX-512 levels) supports.
CpuCapability max_cpu_capability();
// Forces a level (tests and benchmarks compare them); an error above max_cpu_capability().
void set_cpu_capability(CpuCapability level);
const char* to_string(CpuCapability level);
// "avx2", "default" (the same), "avx512", "avx512_bf16"; nullopt for anything else.
std::optional<CpuCapability> parse_cpu_capability(std::string_view name);

}  // namespace kiln::cpu
