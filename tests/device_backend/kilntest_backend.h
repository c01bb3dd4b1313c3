#pragma once
// What the kilntest backend (kilntest_backend.cpp) counts, for the tests to read.
#include <atomic>
#include <cstdint>

namespace kilntest {
struct Counters {
  std::atomic<int64_t> allocations[2] = {0, 0};  // per device
  std::atomic<int64_t> copies{0};                // copy_bytes calls
  std::atomic<int64_t> native_adds{0};           // calls of its own add kernel
  std::atomic<int64_t> pinned_allocations{0};    // from its host allocator
};
const Counters& counters();
}  // namespace kilntest
