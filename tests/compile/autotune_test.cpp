// max-autotune: every GEMM implementation computes the same product; a compiled function in
// mode "max-autotune" times its products once, reuses the choice, and another process reads it
// from the disk.
#include "kiln/compile/codegen/gemm_autotune.h"

#include <gtest/gtest.h>

#include <fstream>

#include "kiln/backend/cpu/blas.h"
#include "kiln/kiln.h"
#include "tests/compile/cache_dir.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// C = A @ B with B passed transposed (a linear layer's weight), batched, through `impl`.
Tensor product_with(cpu::GemmImpl impl, const Tensor& a, const Tensor& w) {
  const int64_t batch = a.size(0), m = a.size(1), k = a.size(2), n = w.size(0);
  Tensor c = full({batch, m, n}, 7.0, TensorOptions(a.dtype()));  // beta 0 must ignore it
  cpu::GemmArgs g;
  g.dtype = a.dtype();
  g.batch = batch;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = {a.data_ptr(), m * k, k, 1};
  g.b = {w.data_ptr(), 0, 1, k};  // B[p][j] = w[j][p]: one matrix for every batch
  g.c = c.data_ptr();
  g.c_batch_stride = m * n;
  g.ldc = n;
  EXPECT_TRUE(cpu::gemm_with(impl, g)) << cpu::to_string(impl);
  return c;
}

TEST(GemmImpls, EveryCandidateComputesTheSameProduct) {
  manual_seed(1);
  for (ScalarType dtype : {kFloat32, kBFloat16, kFloat16}) {
    const Tensor a = randn({3, 37, 29}).to(dtype), w = randn({53, 29}).to(dtype);
    const Tensor want = a.to(kFloat64).matmul(w.to(kFloat64).t());
    cpu::GemmArgs probe;
    probe.dtype = dtype;
    probe.m = 37;
    probe.n = 53;
    probe.k = 29;
    const std::vector<cpu::GemmImpl> impls = cpu::gemm_candidates(probe);
    if (dtype == kFloat32) EXPECT_GE(impls.size(), 2u);
    const double tol = dtype == kFloat32 ? 1e-4 : 0.1;
    for (cpu::GemmImpl impl : impls)
      EXPECT_TRUE(allclose(product_with(impl, a, w).to(kFloat64), want, tol, tol))
          << dtype << " " << cpu::to_string(impl);
  }
}

TEST(GemmImpls, AnImplementationThatCannotRunADtypeSaysSo) {
  cpu::GemmArgs g;
  g.dtype = kFloat64;
  g.m = g.n = g.k = 8;
  EXPECT_TRUE(cpu::gemm_candidates(g).empty());
  EXPECT_FALSE(cpu::gemm_with(cpu::GemmImpl::Kiln, g));
  EXPECT_FALSE(cpu::gemm_with(cpu::GemmImpl::Converted, g));
}

Tensor linear_gelu(const Tensor& x, const Tensor& w, const Tensor& b) {
  return gelu(x.matmul(w.t()) + b);
}

// Runs a max-autotune compiled linear + gelu on [64, 256] x [256, 256]; returns the result.
Tensor run_tuned_linear() {
  manual_seed(2);
  const Tensor x = randn({64, 256}), w = randn({256, 256}) * 0.05, b = randn({256});
  auto f = compile(linear_gelu, CompileOptions().mode("max-autotune").dynamic(false));
  const Tensor y = f(x, w, b);
  EXPECT_TRUE(allclose(y, linear_gelu(x, w, b), 1e-4, 1e-4));
  return y;
}

TEST(MaxAutotune, ACompiledFunctionTunesEachProductOnceAndMatchesEager) {
  CacheDir dir;
  const compiler::GemmAutotuneStats before = compiler::gemm_autotune_stats();
  run_tuned_linear();
  const compiler::GemmAutotuneStats tuned = compiler::gemm_autotune_stats();
  EXPECT_EQ(tuned.tuned, before.tuned + 1);
  run_tuned_linear();
  const compiler::GemmAutotuneStats again = compiler::gemm_autotune_stats();
  EXPECT_EQ(again.tuned, tuned.tuned);
  EXPECT_EQ(again.memory_hits, tuned.memory_hits + 1);
  // The choice is on disk, one line: implementation, tab, key.
  std::ifstream in(dir.path() / "autotune" /
                   (std::string("gemm-") + cpu::to_string(cpu::cpu_capability()) + ".txt"));
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_NE(line.find("64x256x256"), std::string::npos) << line;
}

TEST(MaxAutotune, UnknownModesAreErrors) {
  EXPECT_THROW(compile(linear_gelu, CompileOptions().mode("max_autotune")), Error);
  EXPECT_THROW(compiler::CompiledAutograd(CompileOptions().mode("fast")), Error);
}

// The child half of the next test: runs the tuned function and reports the counters.
TEST(MaxAutotune, ChildProcess) {
  const char* report = std::getenv("KILN_TEST_AUTOTUNE_REPORT");
  if (!report) GTEST_SKIP() << "run by AnotherProcessReusesTheChoices";
  run_tuned_linear();
  const compiler::GemmAutotuneStats s = compiler::gemm_autotune_stats();
  std::ofstream(report) << s.tuned << " " << s.disk_hits;
}

TEST(MaxAutotune, AnotherProcessReusesTheChoices) {
  CacheDir dir;
  const fs::path report = dir.path() / "report.txt";
  fs::create_directories(dir.path());
  // The child runs its one test whatever shard this process is (make test-sanitize shards).
  const std::string cmd =
      "env -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_INDEX KILN_TEST_AUTOTUNE_REPORT='" +
      report.string() + "' '" + fs::read_symlink("/proc/self/exe").string() +
      "' --gtest_filter=MaxAutotune.ChildProcess > /dev/null 2>&1";
  auto child = [&] {
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    int64_t tuned = -1, disk_hits = -1;
    std::ifstream(report) >> tuned >> disk_hits;
    return std::pair{tuned, disk_hits};
  };
  EXPECT_EQ(child(), (std::pair<int64_t, int64_t>{1, 0}));  // the first process times it
  EXPECT_EQ(child(), (std::pair<int64_t, int64_t>{0, 1}));  // the second reads the choice
}

}  // namespace
}  // namespace kiln
