// Each test starts from the state a fresh process has: the default CPU generator at its default
// seed, the op-table samples' stream at its start, float32 the default dtype. `make test` runs
// every test in a process of its own, but `make test-sanitize` runs them in shards that share one
// (tests/CMakeLists.txt), and a test's random samples must not depend on which tests ran before it.
#include <gtest/gtest.h>

#include "kiln/core/dtype.h"
#include "kiln/core/generator.h"
#include "kiln/ops/samples_rng.h"

namespace {

class FreshState : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override {
    kiln::default_generator().manual_seed(kiln::kDefaultRngSeed);
    kiln::samples::reset_rng();
    kiln::set_default_dtype(kiln::kFloat32);
  }
};

const bool kRegistered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new FreshState);
  return true;
}();

}  // namespace
