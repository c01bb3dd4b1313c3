#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {
namespace {

constexpr int64_t kLarge = int64_t{40} << 20;  // bytes, over the 32 MB large-buffer line
constexpr size_t kLargeRounded = size_t{40} << 20;

class CpuCache : public ::testing::Test {
 protected:
  void SetUp() override {
    limit_ = cpu::cache_limit();
    cpu::set_cache_limit(size_t{256} << 20);
    cpu::empty_cache();
  }
  void TearDown() override {
    cpu::empty_cache();
    cpu::set_cache_limit(limit_);
  }
  size_t limit_ = 0;
};

TEST_F(CpuCache, ReleasedLargeBufferIsReusedForTheSameSize) {
  const void* first = nullptr;
  {
    Tensor a = empty({kLarge}, kUInt8);
    first = a.data_ptr();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % (2 << 20), 0u);  // huge-page aligned
  }
  EXPECT_EQ(cpu::cached_bytes(), kLargeRounded);
  Tensor b = full({kLarge / 4}, 3.0f, kFloat32);
  EXPECT_EQ(b.data_ptr(), first);
  EXPECT_EQ(cpu::cached_bytes(), 0u);
  EXPECT_FLOAT_EQ(b[kLarge / 4 - 1].item<float>(), 3.0f);
  // A different size does not take it.
  b = Tensor();
  Tensor c = empty({kLarge + (4 << 20)}, kUInt8);
  EXPECT_NE(c.data_ptr(), first);
  EXPECT_EQ(cpu::cached_bytes(), kLargeRounded);
}

TEST_F(CpuCache, BuffersFrom128KBAreCachedRoundedToASixteenthOfTheirPowerOfTwo) {
  { Tensor a = empty({(128 << 10) - 1}, kUInt8); }  // left to malloc
  EXPECT_EQ(cpu::cached_bytes(), 0u);
  const void* first = nullptr;
  {
    Tensor a = empty({(1 << 20) + 1}, kFloat32);  // 4 MB + 4 bytes
    first = a.data_ptr();
  }
  EXPECT_EQ(cpu::cached_bytes(), size_t{(4 << 20) + (256 << 10)});
  Tensor b = empty({(4 << 20) + 100}, kUInt8);  // the same 256 KB step
  EXPECT_EQ(b.data_ptr(), first);
  EXPECT_EQ(cpu::cached_bytes(), 0u);
}

TEST_F(CpuCache, LimitEvictsOldestAndZeroTurnsCachingOff) {
  cpu::set_cache_limit(kLargeRounded * 2);
  { Tensor a = empty({kLarge}, kUInt8), b = empty({kLarge}, kUInt8), c = empty({kLarge}, kUInt8); }
  EXPECT_EQ(cpu::cached_bytes(), 2 * kLargeRounded);
  cpu::set_cache_limit(kLargeRounded);
  EXPECT_EQ(cpu::cached_bytes(), kLargeRounded);
  cpu::empty_cache();
  EXPECT_EQ(cpu::cached_bytes(), 0u);
  cpu::set_cache_limit(0);
  { Tensor a = empty({kLarge}, kUInt8); }
  EXPECT_EQ(cpu::cached_bytes(), 0u);
}

TEST_F(CpuCache, BuffersUnder128KBAreKeptPerThreadRoundedToAQuarterOfTheirPowerOfTwo) {
  { Tensor a = empty({1024}, kUInt8); }  // 1 KB: left to malloc
  EXPECT_EQ(cpu::thread_cached_bytes(), 0u);
  const void* first = nullptr;
  {
    Tensor a = empty({4100}, kUInt8);
    first = a.data_ptr();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  }
  EXPECT_EQ(cpu::thread_cached_bytes(), 5120u);  // 4 KB and a quarter
  Tensor b = full({1200}, 2.0f, kFloat32);       // 4800 bytes: the same slot
  EXPECT_EQ(b.data_ptr(), first);
  EXPECT_EQ(cpu::thread_cached_bytes(), 0u);
  EXPECT_FLOAT_EQ(b[1199].item<float>(), 2.0f);
  // Four buffers a size, 1 MB in all.
  auto release = [](int count, int64_t bytes) {
    std::vector<Tensor> many;
    for (int i = 0; i < count; ++i) many.push_back(empty({bytes}, kUInt8));
  };
  release(6, 4100);
  EXPECT_EQ(cpu::thread_cached_bytes(), 4 * 5120u);
  release(6, 100000);  // 7 quarters of 64 KB
  release(6, 120000);  // 128 KB
  EXPECT_EQ(cpu::thread_cached_bytes(), 4 * 5120u + 4 * 114688u + 4 * 131072u);
  release(1, 70000);  // would pass 1 MB
  EXPECT_EQ(cpu::thread_cached_bytes(), 4 * 5120u + 4 * 114688u + 4 * 131072u);
  // Another thread has its own.
  size_t other = 1;
  std::thread([&] { other = cpu::thread_cached_bytes(); }).join();
  EXPECT_EQ(other, 0u);
  cpu::empty_cache();
  EXPECT_EQ(cpu::thread_cached_bytes(), 0u);
  cpu::set_cache_limit(0);
  { Tensor a = empty({4100}, kUInt8); }
  EXPECT_EQ(cpu::thread_cached_bytes(), 0u);
}

// Buffers of at most 16 bytes come from malloc, 16-byte aligned (within one cache line); larger
// ones are 64-byte aligned. Both hold their bytes.
TEST(CpuAllocator, SmallBuffersSixteenLargerSixtyFourByteAligned) {
  for (int64_t bytes : {1, 4, 15, 16, 17, 64, 100, 4096}) {
    SCOPED_TRACE(std::to_string(bytes) + " bytes");
    std::vector<Tensor> keep;
    for (int k = 0; k < 8; ++k) {
      Tensor t = full({bytes}, k + 1, kUInt8);
      const auto address = reinterpret_cast<uintptr_t>(t.data_ptr());
      EXPECT_EQ(address % (bytes <= 16 ? 16 : 64), 0u);
      if (bytes <= 16) EXPECT_EQ(address / 64, (address + bytes - 1) / 64);  // one cache line
      keep.push_back(t);
    }
    for (int k = 0; k < 8; ++k) EXPECT_EQ(keep[k].sum().item<int64_t>(), (k + 1) * bytes);
  }
}

// memory_allocated counts the bytes live tensors hold, whether their buffer came fresh, from the
// cache or from a thread's slots; the peak is the most held since the last reset.
TEST(CpuAllocator, CountsLiveBytesAndTheirPeak) {
  const int64_t base = cpu::memory_allocated();
  cpu::reset_peak_memory_stats();
  EXPECT_EQ(cpu::max_memory_allocated(), base);
  {
    Tensor big = empty({1 << 20}, kFloat32);  // 4 MB: the shared cache's size
    Tensor small = empty({1000}, kFloat32);   // 4000 bytes: a thread slot's size
    EXPECT_EQ(cpu::memory_allocated(), base + (4 << 20) + 4000);
  }
  EXPECT_EQ(cpu::memory_allocated(), base);
  EXPECT_EQ(cpu::max_memory_allocated(), base + (4 << 20) + 4000);
  { Tensor again = empty({1 << 20}, kFloat32); }  // reuses the cached buffer: counted the same
  EXPECT_EQ(cpu::max_memory_allocated(), base + (4 << 20) + 4000);
  cpu::reset_peak_memory_stats();
  EXPECT_EQ(cpu::max_memory_allocated(), base);
  // An op's temporaries count towards the peak, and its freed ones leave the current count.
  const Tensor x = ones({1 << 18}, kFloat32);
  cpu::reset_peak_memory_stats();
  const Tensor y = (x * 2 + 1).sum();
  EXPECT_EQ(y.item<float>(), 3.0f * (1 << 18));
  EXPECT_GE(cpu::max_memory_allocated(), cpu::memory_allocated() + (1 << 20));
}

}  // namespace
}  // namespace kiln
