#include <gtest/gtest.h>

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

}  // namespace
}  // namespace kiln
