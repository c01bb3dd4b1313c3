#include "kiln/backend/cuda/caching_allocator.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kiln/core/error.h"

namespace kiln::cuda {
namespace {

constexpr size_t kKiB = size_t{1} << 10;
constexpr size_t kMiB = size_t{1} << 20;

void* const s1 = reinterpret_cast<void*>(0x1);
void* const s2 = reinterpret_cast<void*>(0x2);
void* const s3 = reinterpret_cast<void*>(0x3);

// A device of `capacity` bytes backed by host memory, with events that complete when the test
// marks them done. The allocator calls these hooks under its lock.
struct FakeDevice {
  struct Event {
    void* stream;
    bool done = false;
    bool destroyed = false;
  };
  size_t capacity = SIZE_MAX;
  size_t in_use = 0;
  int mallocs = 0;  // successful ones
  int failed_mallocs = 0;
  int frees = 0;
  std::map<char*, size_t> segments;
  std::deque<Event> events;  // a deque keeps the handles (addresses) stable

  RawMemory hooks() {
    return {
        [this](size_t n) -> void* {
          if (n > capacity - in_use) {
            ++failed_mallocs;
            return nullptr;
          }
          auto* p = static_cast<char*>(std::malloc(n));
          segments.emplace(p, n);
          in_use += n;
          ++mallocs;
          return p;
        },
        [this](void* p) {
          auto it = segments.find(static_cast<char*>(p));
          if (it == segments.end()) {
            ADD_FAILURE() << "raw free of unknown " << p;
            return;
          }
          in_use -= it->second;
          segments.erase(it);
          ++frees;
          std::free(p);
        },
        [this](void* stream) -> void* { return &events.emplace_back(Event{stream}); },
        [](void* e) {
          EXPECT_FALSE(static_cast<Event*>(e)->destroyed);
          return static_cast<Event*>(e)->done;
        },
        [](void* e) {
          EXPECT_FALSE(static_cast<Event*>(e)->destroyed);
          static_cast<Event*>(e)->destroyed = true;
        },
    };
  }
  // [p, p + n) lies inside one segment.
  bool holds(void* p, size_t n) const {
    auto it = segments.upper_bound(static_cast<char*>(p));
    if (it == segments.begin()) return false;
    --it;
    return static_cast<char*>(p) + n <= it->first + it->second;
  }
};

class CudaCachingAllocator : public ::testing::Test {
 protected:
  FakeDevice dev;  // declared first: outlives the allocator, whose destructor calls it
  CachingAllocator alloc{dev.hooks()};
};

char* at(void* p, size_t offset) { return static_cast<char*>(p) + offset; }

TEST_F(CudaCachingAllocator, ReusesFreedBlockOfSameSizeOnSameStream) {
  void* a = alloc.allocate(1000, s1);
  ASSERT_NE(a, nullptr);
  alloc.deallocate(a);
  EXPECT_EQ(alloc.allocate(1000, s1), a);
  void* big = alloc.allocate(4 * kMiB, s1);
  alloc.deallocate(big);
  EXPECT_EQ(alloc.allocate(4 * kMiB, s1), big);
  EXPECT_EQ(dev.mallocs, 2);  // one small segment, one large
  EXPECT_EQ(dev.frees, 0);
}

TEST_F(CudaCachingAllocator, DoesNotReuseBlocksAcrossStreams) {
  void* a = alloc.allocate(1000, s2);
  alloc.deallocate(a);
  void* b = alloc.allocate(1000, s1);
  EXPECT_NE(b, a);
  alloc.deallocate(b);
  EXPECT_NE(alloc.allocate(1000, s3), a);
  EXPECT_EQ(dev.mallocs, 3);
  EXPECT_EQ(alloc.allocate(1000, s2), a);
  EXPECT_EQ(alloc.allocate(1000, s1), b);
  EXPECT_EQ(dev.mallocs, 3);
}

TEST_F(CudaCachingAllocator, SplitsSegments) {
  void* a = alloc.allocate(1000, s1);  // rounds to 1 KiB
  void* b = alloc.allocate(3000, s1);  // rounds to 3 KiB
  EXPECT_EQ(b, at(a, kKiB));
  EXPECT_EQ(dev.mallocs, 1);
  EXPECT_EQ(alloc.reserved_bytes(), 2 * kMiB);
  EXPECT_EQ(alloc.allocated_bytes(), 4 * kKiB);

  void* c = alloc.allocate(3 * kMiB, s1);  // a 20 MiB large segment
  void* d = alloc.allocate(5 * kMiB, s1);
  EXPECT_EQ(d, at(c, 3 * kMiB));
  EXPECT_EQ(dev.mallocs, 2);
  EXPECT_EQ(alloc.reserved_bytes(), 22 * kMiB);

  // A large block keeps a remainder of 1 MiB or less rather than split it off.
  void* e = alloc.allocate(19 * kMiB + 512 * kKiB, s2);
  EXPECT_EQ(dev.mallocs, 3);
  EXPECT_EQ(alloc.allocated_bytes(), 4 * kKiB + 8 * kMiB + 20 * kMiB);
  for (void* p : {a, b, c, d, e}) alloc.deallocate(p);
  EXPECT_EQ(alloc.allocated_bytes(), 0u);
}

TEST_F(CudaCachingAllocator, MergesFreedNeighbours) {
  void* a = alloc.allocate(512 * kKiB, s1);
  void* b = alloc.allocate(512 * kKiB, s1);
  void* c = alloc.allocate(kMiB, s1);
  ASSERT_EQ(b, at(a, 512 * kKiB));
  ASSERT_EQ(c, at(a, kMiB));
  alloc.deallocate(a);
  alloc.deallocate(c);
  alloc.deallocate(b);  // joins both neighbours into the whole segment
  // Unmerged, the second 1 MiB request would find only two 512 KiB blocks.
  EXPECT_EQ(alloc.allocate(kMiB, s1), a);
  EXPECT_EQ(alloc.allocate(kMiB, s1), at(a, kMiB));
  EXPECT_EQ(dev.mallocs, 1);

  std::vector<void*> large;
  for (int i = 0; i < 5; ++i) large.push_back(alloc.allocate(4 * kMiB, s1));
  EXPECT_EQ(large[4], at(large[0], 16 * kMiB));
  EXPECT_EQ(dev.mallocs, 2);
  for (int i : {1, 3, 0, 4, 2}) alloc.deallocate(large[i]);
  EXPECT_EQ(alloc.allocate(20 * kMiB, s1), large[0]);
  EXPECT_EQ(dev.mallocs, 2);
}

TEST_F(CudaCachingAllocator, TracksCurrentAndPeakStats) {
  void* a = alloc.allocate(1, s1);
  EXPECT_EQ(alloc.allocated_bytes(), 512u);
  void* b = alloc.allocate(kMiB, s1);
  void* c = alloc.allocate(4 * kMiB, s1);
  MemoryStats s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes.current, int64_t(5 * kMiB + 512));
  EXPECT_EQ(s.reserved_bytes.current, int64_t(22 * kMiB));
  EXPECT_EQ(s.active_blocks.current, 3);
  EXPECT_EQ(s.segments.current, 2);

  alloc.deallocate(c);
  s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes.current, int64_t(kMiB + 512));
  EXPECT_EQ(s.allocated_bytes.peak, int64_t(5 * kMiB + 512));
  EXPECT_EQ(s.reserved_bytes.current, int64_t(22 * kMiB));  // cached
  EXPECT_EQ(s.active_blocks.current, 2);
  EXPECT_EQ(s.active_blocks.peak, 3);

  alloc.reset_peak_stats();
  alloc.empty_cache();
  s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes.peak, int64_t(kMiB + 512));
  EXPECT_EQ(s.reserved_bytes.current, int64_t(2 * kMiB));
  EXPECT_EQ(s.reserved_bytes.peak, int64_t(22 * kMiB));  // reset before the release
  EXPECT_EQ(s.segments.current, 1);
  EXPECT_EQ(s.segments.peak, 2);
  alloc.deallocate(a);
  alloc.deallocate(b);
  s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes.current, 0);
  EXPECT_EQ(s.active_blocks.current, 0);
  EXPECT_EQ(s.num_alloc_retries, 0);
  EXPECT_EQ(s.num_ooms, 0);
}

TEST_F(CudaCachingAllocator, EmptyCacheReleasesFullyFreeSegments) {
  void* a = alloc.allocate(kKiB, s1);
  void* b = alloc.allocate(4 * kMiB, s1);
  void* c = alloc.allocate(kKiB, s2);  // its own small segment, kept alive
  alloc.deallocate(a);
  alloc.deallocate(b);
  alloc.empty_cache();
  EXPECT_EQ(dev.frees, 2);
  EXPECT_EQ(dev.in_use, 2 * kMiB);
  EXPECT_EQ(alloc.reserved_bytes(), 2 * kMiB);
  EXPECT_EQ(alloc.stats().segments.current, 1);
  EXPECT_TRUE(dev.holds(c, kKiB));
  alloc.allocate(kKiB, s1);  // nothing cached for s1 any more
  EXPECT_EQ(dev.mallocs, 4);
}

TEST(CudaCachingAllocatorLifetime, DestructorReturnsEverySegment) {
  FakeDevice dev;
  {
    CachingAllocator alloc(dev.hooks());
    alloc.allocate(kKiB, s1);  // still live
    alloc.deallocate(alloc.allocate(4 * kMiB, s1));
    void* p = alloc.allocate(kKiB, s2);
    alloc.record_stream(p, s3);
    alloc.deallocate(p);  // waiting for its event
  }
  EXPECT_EQ(dev.mallocs, 3);
  EXPECT_EQ(dev.frees, 3);
  EXPECT_EQ(dev.in_use, 0u);
  ASSERT_EQ(dev.events.size(), 1u);
  EXPECT_TRUE(dev.events[0].destroyed);
}

TEST_F(CudaCachingAllocator, RetriesAfterFreeingTheCache) {
  dev.capacity = 20 * kMiB;
  alloc.deallocate(alloc.allocate(kKiB, s1));  // a cached 2 MiB segment
  void* p = alloc.allocate(5 * kMiB, s1);      // needs 20 MiB: fits only without the cache
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(dev.failed_mallocs, 1);
  EXPECT_EQ(dev.frees, 1);
  MemoryStats s = alloc.stats();
  EXPECT_EQ(s.num_alloc_retries, 1);
  EXPECT_EQ(s.num_ooms, 0);
  EXPECT_EQ(s.reserved_bytes.current, int64_t(20 * kMiB));
  EXPECT_EQ(s.segments.current, 1);
}

TEST_F(CudaCachingAllocator, ThrowsOutOfMemoryNamingTheSizes) {
  dev.capacity = 22 * kMiB;
  void* a = alloc.allocate(kMiB, s1);      // 2 MiB segment
  void* b = alloc.allocate(3 * kMiB, s1);  // 20 MiB segment
  try {
    alloc.allocate(30 * kMiB, s1);
    FAIL() << "expected an out-of-memory error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(dynamic_cast<const OutOfMemoryError*>(&e), nullptr);
    EXPECT_EQ(msg.rfind("cuda: out of memory", 0), 0u) << msg;
    EXPECT_NE(msg.find("tried to allocate 30.00 MiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("4.00 MiB allocated"), std::string::npos) << msg;
    EXPECT_NE(msg.find("22.00 MiB reserved"), std::string::npos) << msg;
  }
  MemoryStats s = alloc.stats();
  EXPECT_EQ(s.num_ooms, 1);
  EXPECT_EQ(s.num_alloc_retries, 1);
  EXPECT_EQ(dev.failed_mallocs, 2);
  EXPECT_EQ(dev.frees, 0);  // both segments hold live blocks
  EXPECT_EQ(s.allocated_bytes.current, int64_t(4 * kMiB));

  // Still usable: once a and b are freed, the retry releases their segments.
  alloc.deallocate(a);
  alloc.deallocate(b);
  EXPECT_NE(alloc.allocate(21 * kMiB, s1), nullptr);  // a 22 MiB segment
  EXPECT_EQ(alloc.stats().num_alloc_retries, 2);
  EXPECT_EQ(dev.frees, 2);
  EXPECT_EQ(alloc.reserved_bytes(), 22 * kMiB);
  EXPECT_EQ(alloc.stats().segments.current, 1);

  EXPECT_THROW(alloc.allocate(SIZE_MAX, s1), OutOfMemoryError);
  EXPECT_EQ(alloc.stats().num_ooms, 2);
}

TEST_F(CudaCachingAllocator, RecordStreamHoldsBlockUntilEventsComplete) {
  alloc.deallocate(alloc.allocate(kKiB, s1));
  EXPECT_TRUE(dev.events.empty());  // no other stream used it

  void* a = alloc.allocate(kKiB, s1);
  alloc.record_stream(a, s2);
  alloc.record_stream(a, s2);
  alloc.record_stream(a, s1);  // its own stream: nothing to wait for
  alloc.deallocate(a);
  ASSERT_EQ(dev.events.size(), 1u);
  EXPECT_EQ(dev.events[0].stream, s2);
  EXPECT_EQ(alloc.allocated_bytes(), 0u);
  EXPECT_EQ(alloc.stats().active_blocks.current, 1);

  void* b = alloc.allocate(kKiB, s1);
  EXPECT_NE(b, a);
  alloc.empty_cache();
  EXPECT_EQ(dev.frees, 0);
  dev.events[0].done = true;
  EXPECT_EQ(alloc.allocate(kKiB, s1), a);
  EXPECT_TRUE(dev.events[0].destroyed);

  // Two other streams: reused only when both events are done.
  alloc.record_stream(a, s2);
  alloc.record_stream(a, s3);
  alloc.deallocate(a);
  ASSERT_EQ(dev.events.size(), 3u);
  dev.events[1].done = true;
  void* c = alloc.allocate(kKiB, s1);
  EXPECT_NE(c, a);
  dev.events[2].done = true;
  EXPECT_EQ(alloc.allocate(kKiB, s1), a);
  EXPECT_EQ(dev.mallocs, 1);
  alloc.deallocate(b);
  alloc.deallocate(c);
  alloc.deallocate(a);
  EXPECT_EQ(alloc.stats().active_blocks.current, 0);
}

TEST_F(CudaCachingAllocator, RejectsPointersItDidNotHandOut) {
  int x = 0;
  std::ostringstream name;
  name << static_cast<void*>(&x);
  try {
    alloc.deallocate(&x);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(name.str()), std::string::npos) << e.what();
  }
  EXPECT_THROW(alloc.record_stream(&x, s2), Error);
  void* a = alloc.allocate(kKiB, s1);
  alloc.deallocate(a);
  EXPECT_THROW(alloc.deallocate(a), Error);  // twice
  alloc.deallocate(nullptr);
  EXPECT_EQ(alloc.allocate(0, s1), nullptr);
  EXPECT_EQ(dev.mallocs, 1);
  EXPECT_EQ(alloc.allocated_bytes(), 0u);
}

TEST_F(CudaCachingAllocator, RandomTrafficLeavesNothingBehind) {
  dev.capacity = 160 * kMiB;  // tight enough for retries and some out-of-memory errors
  std::mt19937 rng(1234);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  void* streams[] = {s1, s2, s3};
  std::map<char*, size_t> live;  // address -> requested bytes
  int allocs = 0;
  int ooms = 0;
  for (int step = 0; step < 4000; ++step) {
    if (live.empty() || (live.size() < 48 && pick(2) == 0)) {
      const size_t r = pick(10);
      const size_t n = r < 6 ? 1 + pick(8 * kKiB) : r < 9 ? 1 + pick(kMiB) : 1 + pick(24 * kMiB);
      void* stream = streams[pick(3)];
      char* p;
      try {
        p = static_cast<char*>(alloc.allocate(n, stream));
      } catch (const OutOfMemoryError&) {
        ++ooms;
        continue;
      }
      ++allocs;
      ASSERT_TRUE(dev.holds(p, n));
      auto next = live.lower_bound(p);
      ASSERT_TRUE(next == live.end() || p + n <= next->first);
      ASSERT_TRUE(next == live.begin() || std::prev(next)->first + std::prev(next)->second <= p);
      live.emplace(p, n);
      if (pick(8) == 0) alloc.record_stream(p, streams[pick(3)]);
    } else {
      auto it = std::next(live.begin(), static_cast<long>(pick(live.size())));
      alloc.deallocate(it->first);
      live.erase(it);
    }
    for (auto& e : dev.events)
      if (pick(4) == 0) e.done = true;
    ASSERT_EQ(alloc.reserved_bytes(), dev.in_use);
    ASSERT_EQ(alloc.stats().segments.current, static_cast<int64_t>(dev.segments.size()));
  }
  for (auto& [p, n] : live) alloc.deallocate(p);
  for (auto& e : dev.events) e.done = true;
  alloc.empty_cache();

  MemoryStats s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes.current, 0);
  EXPECT_EQ(s.active_blocks.current, 0);
  EXPECT_EQ(s.reserved_bytes.current, 0);
  EXPECT_EQ(s.segments.current, 0);
  EXPECT_EQ(dev.in_use, 0u);
  EXPECT_EQ(dev.frees, dev.mallocs);
  for (auto& e : dev.events) EXPECT_TRUE(e.destroyed);
  EXPECT_EQ(s.num_ooms, ooms);
  EXPECT_GT(s.num_alloc_retries, 0);
  EXPECT_LT(dev.mallocs, allocs / 10);  // the cache served most requests
}

TEST_F(CudaCachingAllocator, ThreadsShareOneAllocator) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this, t] {
      std::vector<void*> mine;
      void* stream = reinterpret_cast<void*>(uintptr_t(0x10 + t));
      for (int i = 0; i < 2000; ++i) {
        mine.push_back(alloc.allocate(size_t(1 + (i * 7919) % 200000), stream));
        if (i % 3 == 2) {
          alloc.deallocate(mine.front());
          mine.erase(mine.begin());
        }
      }
      for (void* p : mine) alloc.deallocate(p);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(alloc.allocated_bytes(), 0u);
  EXPECT_EQ(alloc.stats().active_blocks.current, 0);
  alloc.empty_cache();
  EXPECT_EQ(dev.in_use, 0u);
}

}  // namespace
}  // namespace kiln::cuda
