// The CUDA backend's scatter kernels (scatter.h): without a GPU, every source variant compiles
// with NVRTC; on a GPU, the scatter family, index_add/index_put/put with repeated indices and
// advanced indexing match the CPU, and a bad index is raised at the next synchronisation.
#include <gtest/gtest.h>

#include <string>

#include "kiln/backend/cuda/nvrtc_program.h"
#include "kiln/backend/cuda/scatter.h"
#include "kiln/core/error.h"
#include "tests/cuda/cuda_test_util.h"

namespace kiln {
namespace {

using cpu::ScatterOp;
using testing::error_of;
using testing::has;

TEST(CudaScatterSource, EveryVariantCompiles) {
  int n = 0;
  for (ScalarType index : {kInt64, kInt32}) {
    const std::string suffix = "_" + std::string(dtype_name(index));
    for (ScalarType dt : {kBool, kFloat16, kFloat32, kFloat64}) {
      const std::string name = "kiln_test_scatter_assign_" + std::string(dtype_name(dt)) + suffix;
      testing::expect_ptx_compiles(cuda::scatter_source(ScatterOp::Assign, dt, index, name), name),
          ++n;
    }
    for (ScatterOp op : {ScatterOp::Sum, ScatterOp::Prod, ScatterOp::Max, ScatterOp::Min})
      for (ScalarType dt : {kFloat32, kFloat64, kInt64}) {
        const std::string name = "kiln_test_scatter_" + std::to_string(static_cast<int>(op)) + "_" +
                                 std::string(dtype_name(dt)) + suffix;
        testing::expect_ptx_compiles(cuda::scatter_source(op, dt, index, name), name), ++n;
      }
  }
  for (ScalarType dt : {kFloat32, kFloat64, kInt64}) {
    const std::string name = "kiln_test_scatter_mean_" + std::string(dtype_name(dt));
    testing::expect_ptx_compiles(cuda::scatter_mean_source(dt, name), name), ++n;
  }
  testing::expect_ptx_compiles(cuda::linear_index_source("kiln_test_linear_index"),
                               "kiln_test_linear_index"),
      ++n;
  EXPECT_EQ(n, 2 * (4 + 12) + 3 + 1);
  EXPECT_THROW(cuda::scatter_source(ScatterOp::Sum, kFloat16, kInt64, "k"), Error);
  EXPECT_THROW(cuda::scatter_source(ScatterOp::Mean, kFloat32, kInt64, "k"), Error);
  EXPECT_THROW(cuda::scatter_source(ScatterOp::Assign, kFloat32, kFloat32, "k"), Error);
  EXPECT_THROW(cuda::scatter_mean_source(kInt32, "k"), Error);
}

void expect_matches(const Tensor& on_device, const Tensor& on_cpu, double tol) {
  ASSERT_EQ(on_device.sizes().vec(), on_cpu.sizes().vec());
  EXPECT_TRUE(allclose(on_device.cpu().to(kFloat64), on_cpu.to(kFloat64), tol, tol))
      << on_device.cpu() << "\n"
      << on_cpu;
}

void expect_native(std::initializer_list<const char*> ops) {
  for (const char* op : ops) EXPECT_FALSE(testing::fell_back(op)) << op << " fell back";
}

// Many sources per destination, so the atomics contend; int32 and float16 reduce through
// int64 and float32 as on the CPU.
TEST(CudaScatter, ReductionsWithRepeatedIndicesMatchTheCpu) {
  REQUIRE_GPU();
  manual_seed(7);
  for (ScalarType dt : {kFloat32, kFloat64, kInt64, kInt32, kFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    const double tol = dt == kFloat16 ? 1e-2 : dt == kFloat32 ? 1e-4 : 1e-10;
    const bool integral = !is_floating_point(dt);
    Tensor self = (randn({6, 33}) * 3).to(dt), src = (randn({200, 33}) * 3).to(dt);
    if (!integral) src = src / 3 + 1;  // products of 30-odd factors stay finite
    Tensor index = randint(0, 6, {200, 33});
    Tensor gs = self.cuda(), gsrc = src.cuda(), gi = index.cuda();
    expect_matches(scatter_add(gs, 0, gi, gsrc), scatter_add(self, 0, index, src), tol);
    for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"})
      for (bool include_self : {true, false}) {
        SCOPED_TRACE(std::string(reduce) + (include_self ? "" : ", without self"));
        if (integral && std::string(reduce) == "prod") continue;  // overflows differ
        expect_matches(scatter_reduce(gs, 0, gi, gsrc, reduce, include_self),
                       scatter_reduce(self, 0, index, src, reduce, include_self),
                       std::string(reduce) == "prod" ? 1e-3 : tol);
      }
    Tensor rows = randint(0, 6, {200}).to(kInt32);
    expect_matches(gs.index_add(0, rows.cuda(), gsrc, 2), self.index_add(0, rows, src, 2), tol);
    Tensor flat = randint(-198, 198, {200});
    expect_matches(gs.put(flat.cuda(), gsrc.select(1, 0), true),
                   self.put(flat, src.select(1, 0), true), tol);
    Tensor pos = randint(0, 6, {200});
    expect_matches(index_put(gs, {pos.cuda()}, gsrc, true), index_put(self, {pos}, src, true), tol);
  }
  expect_native({"scatter_add", "scatter_reduce", "index_add", "put", "index_put"});
}

TEST(CudaScatter, AdvancedIndexingMatchesTheCpu) {
  REQUIRE_GPU();
  manual_seed(8);
  Tensor x = randn({5, 6, 7}), g = x.cuda();
  Tensor mask = x.select(2, 0) > 0;
  Tensor i = tensor(std::vector<int64_t>{4, -1, 0}), j = tensor(std::vector<int64_t>{2, 6, -7});
  using indexing::Slice;
  expect_matches(g.index({mask.cuda()}), x.index({mask}), 0);
  expect_matches(g.index({i.cuda(), Slice(), j.cuda()}), x.index({i, Slice(), j}), 0);
  expect_matches(g.index({Slice(), i.cuda().view({3, 1}), j.cuda()}),
                 x.index({Slice(), i.view({3, 1}), j}), 0);
  expect_matches(take(g, j.cuda() * 30), take(x, j * 30), 0);
  Tensor y = x.clone(), gy = g.clone();
  y.index_put_({i, Slice(), j}, tensor(1.5));
  gy.index_put_({i.cuda(), Slice(), j.cuda()}, tensor(1.5).cuda());
  expect_matches(gy, y, 0);
  expect_native({"index", "index_put_", "take"});
}

// The op names itself in the error raised at the next synchronisation; the device stays usable.
TEST(CudaScatter, AnIndexOutOfRangeIsRaisedAtTheNextSynchronisation) {
  REQUIRE_GPU();
  Tensor x = zeros({4, 3}).cuda(), src = ones({2, 3}).cuda();
  Tensor bad = tensor(std::vector<int64_t>{0, 1, 2, 3, 4, 5}).view({2, 3}).cuda();
  std::string e = error_of([&] {
    scatter_add(x, 0, bad, src);
    cuda::synchronize();
  });
  EXPECT_TRUE(has(e, "scatter_add: CUDA device-side assertion failed in kernel kiln_scatter_sum"))
      << e;
  EXPECT_TRUE(has(e, "is out of bounds for dimension 0 with size 4")) << e;
  e = error_of([&] { take(x, tensor(std::vector<int64_t>{-13}).cuda()).cpu(); });
  EXPECT_TRUE(has(e, "take: CUDA device-side assertion failed in kernel kiln_linear_index")) << e;
  EXPECT_TRUE(has(e, "index -13 is out of bounds for dimension 0 with size 12")) << e;
  EXPECT_EQ(error_of([&] { cuda::synchronize(); }), "");
  EXPECT_DOUBLE_EQ(scatter_add(x, 0, bad % 4, src).sum().item<double>(), 6.0);
}

}  // namespace
}  // namespace kiln
