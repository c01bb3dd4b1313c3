#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {
namespace {

TEST(Threads, SetNumThreadsIsSeenByGetAndByKernels) {
  const int before = get_num_threads();
  EXPECT_GE(before, 1);
  set_num_threads(1);
  EXPECT_EQ(get_num_threads(), 1);
  // A large op still computes the right answer on one thread.
  Tensor x = ones({1 << 18}, kFloat64);
  EXPECT_DOUBLE_EQ((x * 2.0).sum().item<double>(), double(1 << 19));
  set_num_threads(before);
  EXPECT_EQ(get_num_threads(), before);
}

TEST(Threads, NonPositiveCountIsAnError) {
  try {
    set_num_threads(0);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("set_num_threads: expected a positive number of threads"),
              std::string::npos);
  }
}

// kiln::parallel_for (at::parallel_for in the compat layer): every index once, on up to the set
// number of threads; a range under the grain inline; errors rethrown on the caller.
TEST(ParallelFor, CoversTheRangeOnceAndRethrows) {
  const int before = get_num_threads();
  set_num_threads(2);
  std::vector<std::atomic<int>> seen(1000);
  std::atomic<int> chunks{0};
  parallel_for(0, 1000, 10, [&](int64_t begin, int64_t end) {
    ++chunks;
    for (int64_t i = begin; i < end; ++i) ++seen[i];
  });
  for (const auto& s : seen) ASSERT_EQ(s.load(), 1);
  EXPECT_GE(chunks.load(), 1);
  EXPECT_LE(chunks.load(), 2);
  int inline_calls = 0;
  parallel_for(5, 9, 100,
               [&](int64_t begin, int64_t end) { inline_calls += begin == 5 && end == 9; });
  EXPECT_EQ(inline_calls, 1);
  parallel_for(3, 3, 0, [&](int64_t, int64_t) { ADD_FAILURE() << "empty range ran"; });
  EXPECT_THROW(parallel_for(0, 100, 1,
                            [](int64_t b, int64_t) {
                              if (b == 0) throw Error("boom");
                            }),
               Error);
  EXPECT_THROW(parallel_for(0, 10, -1, [](int64_t, int64_t) {}), Error);
  set_num_threads(before);
}

}  // namespace
}  // namespace kiln
