#include "kiln/compile/logs.h"

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <sstream>

#include "kiln/core/error.h"

namespace kiln::compiler {
namespace {

constexpr const char* kNames[] = {"graph", "fusion", "code", "guards", "recompiles", "perf"};

unsigned parse(const std::string& kinds) {
  unsigned mask = 0;
  std::stringstream ss(kinds);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    bool known = false;
    for (unsigned k = 0; k < std::size(kNames); ++k)
      if (item == kNames[k]) mask |= 1u << k, known = true;
    KILN_CHECK(known, "set_logs: unknown log \"", item,
               "\"; expected a comma list of graph, fusion, code, guards, recompiles, perf");
  }
  return mask;
}

std::atomic<unsigned>& mask() {
  static std::atomic<unsigned> m{[] {
    const char* env = std::getenv("KILN_LOGS");
    try {
      return env ? parse(env) : 0u;
    } catch (const Error& e) {
      std::cerr << "kiln: ignoring KILN_LOGS: " << e.what() << "\n";
      return 0u;
    }
  }()};
  return m;
}

}  // namespace

bool log_enabled(LogKind kind) {
  return mask().load(std::memory_order_relaxed) >> static_cast<int>(kind) & 1;
}

void log(LogKind kind, const std::string& text) {
  if (!log_enabled(kind)) return;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::cerr << "[kiln " << kNames[static_cast<int>(kind)] << "] " << text;
  if (text.empty() || text.back() != '\n') std::cerr << "\n";
}

void set_logs(const std::string& kinds) { mask().store(parse(kinds)); }
}  // namespace kiln::compiler
