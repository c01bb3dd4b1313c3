// libkiln is compiled for x86-64-v3 (Note [ISA dispatch] in cpu_capability.h). On an older CPU
// the first AVX2 instruction would kill the process with SIGILL and no word of why; this check
// runs before any other code of the library (a constructor of high priority, in a file compiled
// for plain x86-64) and says so instead.
#include <cstdio>
#include <cstdlib>

namespace {

#if defined(__GNUC__) && defined(__x86_64__)
__attribute__((constructor(101))) void check_cpu_baseline() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi2"))
    return;
  std::fprintf(stderr,
               "kiln: this CPU lacks AVX2, FMA, F16C or BMI2: Kiln needs an x86-64-v3 CPU (Intel "
               "Haswell, AMD Excavator or later)\n");
  std::abort();
}
#endif

}  // namespace
