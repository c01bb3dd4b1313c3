// The CUDA sort kernels: every source variant compiles with NVRTC (no GPU needed), and on a GPU
// long rows with ties and NaNs sort, and take their medians, as the CPU's stable order does.
#include <gtest/gtest.h>

#include "kiln/backend/cuda/nvrtc_program.h"
#include "kiln/backend/cuda/sort.h"
#include "kiln/kiln.h"
#include "tests/cuda/cuda_test_util.h"

namespace kiln {
namespace {

TEST(CudaSortSource, EveryVariantCompiles) {
  for (ScalarType dt :
       {kFloat64, kFloat32, kFloat16, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool}) {
    const std::string sort_name = "kiln_test_sort_rows_" + std::string(dtype_name(dt));
    testing::expect_ptx_compiles(cuda::sort_rows_source(dt, sort_name), sort_name);
    if (dt == kBool) continue;
    for (ScalarType index : {kInt32, kInt64}) {
      const std::string name = "kiln_test_searchsorted_" + std::string(dtype_name(dt)) + "_" +
                               std::string(dtype_name(index));
      testing::expect_ptx_compiles(cuda::search_source(dt, index, name), name);
    }
  }
  EXPECT_THROW(cuda::search_source(kFloat32, kFloat32, "k"), Error);
  // Positions (4 bytes each, padded to 8) and keys of a power-of-two width.
  EXPECT_EQ(cuda::sort_shared_bytes(kFloat64, 1000), 1024u * 4 + 1024u * 8);
  EXPECT_EQ(cuda::sort_shared_bytes(kBFloat16, 3), 16u + 4u * 4);
  EXPECT_EQ(cuda::sort_shared_bytes(kUInt8, 1), 8u + 1u);
}

// Values in [0, distinct) with many ties, and NaNs in some rows when floating.
Tensor tied(std::vector<int64_t> shape, int64_t distinct, ScalarType dt) {
  Tensor x = randint(0, distinct, shape).to(dt);
  if (is_floating_point(dt)) x.select(-1, 7).slice(0, 0, 2).fill_(NAN);
  return x;
}

// Equal values, NaN where NaN, on the host.
bool same(const Tensor& device, const Tensor& host) {
  return device.cpu().to(kFloat64).allclose(host.to(kFloat64), 0, 0, /*equal_nan=*/true);
}

// Sorts and medians of [5, n] rows of x and x.t() on the device against the CPU.
void expect_sorts_as_the_cpu(ScalarType dt, int64_t n) {
  SCOPED_TRACE(std::string(dtype_name(dt)) + " n=" + std::to_string(n));
  const Tensor x = tied({5, n}, 17, dt);
  const Tensor xd = x.cuda();
  for (bool descending : {false, true}) {
    auto [v, i] = sort(x, std::optional<bool>(true), 1, descending);
    auto [vd, id] = sort(xd, std::optional<bool>(true), 1, descending);
    EXPECT_TRUE(same(vd, v));
    EXPECT_TRUE(equal(id.cpu(), i));
  }
  auto [m, mi] = x.t().median(0);
  auto [md, mid] = xd.t().median(0);
  EXPECT_TRUE(same(md, m));
  EXPECT_TRUE(equal(mid.cpu(), mi));
}

TEST(CudaSort, LongRowsWithTiesAndNaNsMatchTheCpu) {
  REQUIRE_GPU();
  manual_seed(3);
  const ScalarType dtypes[] = {kFloat32, kBFloat16, kInt64};
  for (ScalarType dt : dtypes)
    for (int64_t n : {int64_t{333}, cuda::kMaxSortRow}) expect_sorts_as_the_cpu(dt, n);
  // Rows up to kMaxSortRow run on the device; longer ones take the fallback (checked last: a
  // fallback is remembered for the process).
  EXPECT_FALSE(testing::fell_back("sort"));
  EXPECT_FALSE(testing::fell_back("median_dim"));
  for (ScalarType dt : dtypes) expect_sorts_as_the_cpu(dt, cuda::kMaxSortRow + 1);
  EXPECT_TRUE(testing::fell_back("sort"));
}

TEST(CudaSort, SearchsortedMatchesTheCpu) {
  REQUIRE_GPU();
  manual_seed(4);
  const Tensor seq = std::get<0>(sort(randn({6, 500}), -1));
  const Tensor values = randn({6, 300}) * 2;
  for (bool right : {false, true}) {
    const Tensor want = searchsorted(seq, values, false, right);
    EXPECT_TRUE(equal(searchsorted(seq.cuda(), values.cuda(), false, right).cpu(), want));
  }
  EXPECT_FALSE(testing::fell_back("searchsorted"));
}

}  // namespace
}  // namespace kiln
