#include "kiln/backend/cpu/cpu_capability.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "kiln/core/cpu_info.h"
#include "kiln/core/error.h"

namespace kiln::cpu {
namespace {

CpuCapability detect() {
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
  // libgcc's checks include the operating system's support for the 512-bit register state.
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (avx512 && __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vnni"))
    return CpuCapability::Avx512Bf16;
  if (avx512) return CpuCapability::Avx512;
#endif
  return CpuCapability::Avx2;
}

CpuCapability initial() {
  const CpuCapability best = max_cpu_capability();
  const char* env = std::getenv("KILN_CPU_CAPABILITY");
  if (env == nullptr || *env == '\0') return best;
  const std::optional<CpuCapability> asked = parse_cpu_capability(env);
  if (!asked) {
    std::fprintf(stderr,
                 "kiln: ignoring KILN_CPU_CAPABILITY=%s (expected default, avx2, avx512 or "
                 "avx512_bf16); using %s\n",
                 env, to_string(best));
    return best;
  }
  if (*asked > best) {
    std::fprintf(stderr, "kiln: KILN_CPU_CAPABILITY=%s is above what this CPU supports; using %s\n",
                 env, to_string(best));
    return best;
  }
  return *asked;
}

std::atomic<int>& current() {
  static std::atomic<int> level{static_cast<int>(initial())};
  return level;
}

}  // namespace

CpuCapability max_cpu_capability() {
  static const CpuCapability best = detect();
  return best;
}

CpuCapability cpu_capability() {
  return static_cast<CpuCapability>(current().load(std::memory_order_relaxed));
}

void set_cpu_capability(CpuCapability level) {
  KILN_CHECK(level <= max_cpu_capability(), "set_cpu_capability: ", to_string(level),
             " is above what this CPU supports (", to_string(max_cpu_capability()), ")");
  current().store(static_cast<int>(level), std::memory_order_relaxed);
}

const char* to_string(CpuCapability level) {
  switch (level) {
    case CpuCapability::Avx2:
      return "avx2";
    case CpuCapability::Avx512:
      return "avx512";
    case CpuCapability::Avx512Bf16:
      return "avx512_bf16";
  }
  return "unknown";
}

std::optional<CpuCapability> parse_cpu_capability(std::string_view name) {
  if (name == "avx2" || name == "default") return CpuCapability::Avx2;
  if (name == "avx512") return CpuCapability::Avx512;
  if (name == "avx512_bf16") return CpuCapability::Avx512Bf16;
  return std::nullopt;
}

}  // namespace kiln::cpu

namespace kiln {

std::string get_cpu_capability() { return cpu::to_string(cpu::cpu_capability()); }

}  // namespace kiln
