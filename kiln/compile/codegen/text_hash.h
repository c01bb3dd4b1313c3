#pragma once
// The hash the kernel caches key their entries by (FNV-1a, 64-bit), and its hex spelling.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace kiln::compiler {

inline uint64_t fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

inline std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace kiln::compiler
