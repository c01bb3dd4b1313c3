#include <gtest/gtest.h>

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

}  // namespace
}  // namespace kiln
