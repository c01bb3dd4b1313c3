// Note [ISA dispatch] (kiln/backend/cpu/cpu_capability.h): the level names, forcing a level, and
// the kernels at every level this machine supports giving what the baseline (AVX2) level gives:
// the same bits for pointwise math and conversions (each lane computes the same formula at any
// width), and sums within rounding (wider vectors add in another order). ctest also runs the
// op-table reference checks at each level (tests/CMakeLists.txt, isa.*).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "kiln/backend/cpu/cpu_capability.h"
#include "kiln/backend/cpu/small_gemm.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using cpu::CpuCapability;

// A run of the whole suite at a level this CPU lacks (ctest's isa.* on an older machine) skips:
// kiln has said so on stderr, and ctest matches that line.
class SkipUnsupportedLevel : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* asked = std::getenv("KILN_CPU_CAPABILITY");
    if (asked == nullptr) return;
    const auto level = cpu::parse_cpu_capability(asked);
    if (level && *level > cpu::max_cpu_capability())
      GTEST_SKIP() << "KILN_CPU_CAPABILITY=" << asked << " is above what this CPU supports";
  }
};
const auto* const kSkip = ::testing::AddGlobalTestEnvironment(new SkipUnsupportedLevel);

// Restores the level a test found.
class IsaLevel : public ::testing::Test {
 protected:
  void TearDown() override { cpu::set_cpu_capability(saved_); }
  const CpuCapability saved_ = cpu::cpu_capability();
};

std::vector<CpuCapability> supported_levels() {
  std::vector<CpuCapability> levels;
  for (int l = 0; l <= static_cast<int>(cpu::max_cpu_capability()); ++l)
    levels.push_back(static_cast<CpuCapability>(l));
  return levels;
}

TEST(CpuCapability, NamesRoundTrip) {
  for (CpuCapability l : {CpuCapability::Avx2, CpuCapability::Avx512, CpuCapability::Avx512Bf16}) {
    EXPECT_EQ(cpu::parse_cpu_capability(cpu::to_string(l)), l);
  }
  EXPECT_EQ(cpu::parse_cpu_capability("default"), CpuCapability::Avx2);
  EXPECT_EQ(cpu::parse_cpu_capability("AVX512"), std::nullopt);
  EXPECT_EQ(cpu::parse_cpu_capability("sse4"), std::nullopt);
}

TEST_F(IsaLevel, ForcingALevelIsWhatGetCpuCapabilityReports) {
  for (CpuCapability l : supported_levels()) {
    cpu::set_cpu_capability(l);
    EXPECT_EQ(get_cpu_capability(), cpu::to_string(l));
  }
  if (cpu::max_cpu_capability() < CpuCapability::Avx512Bf16) {
    try {
      cpu::set_cpu_capability(CpuCapability::Avx512Bf16);
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("above what this CPU supports"), std::string::npos)
          << e.what();
    }
  }
}

// Values over many binades with the special ones, in a length that leaves every kind of tail.
Tensor hostile_floats(int64_t n) {
  Tensor x = randn({n}, TensorOptions(kFloat32)) * 6;
  float* p = x.data_ptr<float>();
  const float specials[] = {0.f,
                            -0.f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            1e-40f,
                            -3e-39f,
                            88.7f,
                            -103.f,
                            3e38f};
  for (int64_t i = 0; i < n; i += 7) p[i] = specials[(i / 7) % 10];
  return x;
}

// The same bits in every element, where a NaN matches any NaN: the sign and payload of a NaN that
// meets another NaN (x * f(x) for a NaN x) is the first operand's, and the compiler may commute.
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  const Tensor x = a.to(kFloat32).contiguous(), y = b.to(kFloat32).contiguous();
  const float *px = x.data_ptr<float>(), *py = y.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i)
    if (std::memcmp(px + i, py + i, sizeof(float)) != 0 &&
        !(std::isnan(px[i]) && std::isnan(py[i])))
      return false;
  return true;
}

TEST_F(IsaLevel, PointwiseKernelsGiveTheBaselineBitsAtEveryLevel) {
  manual_seed(7);
  using Op = std::function<Tensor(const Tensor&)>;
  const std::vector<std::pair<const char*, Op>> ops = {
      {"exp", [](const Tensor& x) { return x.exp(); }},
      {"log", [](const Tensor& x) { return x.abs().log(); }},
      {"tanh", [](const Tensor& x) { return x.tanh(); }},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }},
      {"gelu", [](const Tensor& x) { return nn::functional::gelu(x); }},
      {"gelu tanh", [](const Tensor& x) { return nn::functional::gelu(x, "tanh"); }},
      {"erf", [](const Tensor& x) { return x.erf(); }},
      {"mul", [](const Tensor& x) { return x * x.flip({0}); }},
      {"add broadcast",
       [](const Tensor& x) {
         return x.view({-1, 1}) + x.narrow(0, 0, std::min<int64_t>(x.size(0), 5));
       }},
      {"strided", [](const Tensor& x) { return x.slice(0, 1, x.size(0), 3).exp(); }},
      {"to bfloat16", [](const Tensor& x) { return x.to(kBFloat16); }},
      {"to float16", [](const Tensor& x) { return x.to(kFloat16); }},
  };
  for (int64_t n : {int64_t{1}, int64_t{15}, int64_t{33}, int64_t{100}, int64_t{70001}}) {
    const Tensor x = hostile_floats(n);
    for (const auto& [name, op] : ops) {
      for (ScalarType dt : {kFloat32, kBFloat16, kFloat16}) {
        SCOPED_TRACE(std::string(name) + " n=" + std::to_string(n) + " " +
                     std::string(dtype_name(dt)));
        const Tensor xd = x.to(dt);
        cpu::set_cpu_capability(CpuCapability::Avx2);
        const Tensor want = op(xd);
        for (CpuCapability l : supported_levels()) {
          cpu::set_cpu_capability(l);
          EXPECT_TRUE(same_bits(op(xd), want)) << "at " << cpu::to_string(l);
        }
      }
    }
  }
}

// float16 converts in hardware in the vector loops and in software (Half) in their tails and
// elsewhere: both give the same bits at every level, NaN payloads, subnormals, ties, overflow
// and every one of the 65536 float16 values included.
TEST_F(IsaLevel, Float16ConversionsMatchHalfBitForBit) {
  std::vector<float> floats;
  for (uint32_t bits :
       {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fa00000u, 0x7fc02000u, 0xffbfffffu, 0x7f800000u,
        0x477ff000u, 0x477fefffu, 0x38800000u, 0x387fffffu, 0x33800000u, 0x33000000u, 0x33000001u,
        0x3f801000u, 0x3f803000u, 0x00000001u, 0x80000000u})
    floats.push_back(std::bit_cast<float>(bits));
  const Tensor random = hostile_floats(4099) * 1e-3;
  for (int64_t i = 0; i < random.numel(); ++i) floats.push_back(random[i].item<float>());
  std::vector<uint16_t> halves(65536);
  for (uint32_t h = 0; h < 65536; ++h) halves[h] = static_cast<uint16_t>(h);
  const Tensor f = tensor(floats);
  const Tensor h = from_blob(halves.data(), {65536}, TensorOptions(kFloat16)).clone();
  for (CpuCapability l : supported_levels()) {
    SCOPED_TRACE(cpu::to_string(l));
    cpu::set_cpu_capability(l);
    const Tensor narrowed = f.to(kFloat16), widened = h.to(kFloat32);
    const auto* n = static_cast<const uint16_t*>(narrowed.data_ptr());
    for (size_t i = 0; i < floats.size(); ++i)
      ASSERT_EQ(n[i], Half(floats[i]).x) << std::hex << std::bit_cast<uint32_t>(floats[i]);
    const float* w = widened.data_ptr<float>();
    for (uint32_t k = 0; k < 65536; ++k)
      ASSERT_EQ(std::bit_cast<uint32_t>(w[k]), std::bit_cast<uint32_t>(Half::to_float(k)))
          << std::hex << k;
  }
}

TEST_F(IsaLevel, ReductionsAndSoftmaxAgreeAtEveryLevel) {
  manual_seed(8);
  for (int64_t cols : {int64_t{7}, int64_t{100}, int64_t{1000}, int64_t{4099}}) {
    const Tensor x = randn({9, cols}, TensorOptions(kFloat32)) * 4;
    for (ScalarType dt : {kFloat32, kBFloat16}) {
      SCOPED_TRACE("cols=" + std::to_string(cols) + " " + std::string(dtype_name(dt)));
      const Tensor xd = x.to(dt);
      cpu::set_cpu_capability(CpuCapability::Avx2);
      const Tensor sum = xd.sum({1}).to(kFloat64), amax = xd.amax({1}), amin = xd.amin({1});
      const Tensor soft = softmax(xd, 1).to(kFloat64), logsoft = log_softmax(xd, 1);
      const Tensor soft0 = softmax(xd, 0).to(kFloat64);
      for (CpuCapability l : supported_levels()) {
        cpu::set_cpu_capability(l);
        SCOPED_TRACE(cpu::to_string(l));
        EXPECT_TRUE(xd.amax({1}).equal(amax));
        EXPECT_TRUE(xd.amin({1}).equal(amin));
        const double sum_tol = dt == kFloat32 ? 1e-4 : 0.5;
        EXPECT_TRUE(xd.sum({1}).to(kFloat64).allclose(sum, 0, sum_tol));
        const double soft_tol = dt == kFloat32 ? 1e-6 : 1e-2;
        EXPECT_TRUE(softmax(xd, 1).to(kFloat64).allclose(soft, soft_tol, 1e-9));
        EXPECT_TRUE(softmax(xd, 0).to(kFloat64).allclose(soft0, soft_tol, 1e-9));
        EXPECT_TRUE(log_softmax(xd, 1).to(kFloat64).allclose(logsoft.to(kFloat64), 1e-5, 1e-5));
      }
    }
  }
  // NaN anywhere in a row is the row's max, at every level.
  Tensor x = zeros({3, 300});
  x.data_ptr<float>()[300 + 123] = std::numeric_limits<float>::quiet_NaN();
  for (CpuCapability l : supported_levels()) {
    cpu::set_cpu_capability(l);
    const Tensor m = x.amax({1});
    EXPECT_EQ(m.data_ptr<float>()[0], 0.f);
    EXPECT_TRUE(std::isnan(m.data_ptr<float>()[1])) << cpu::to_string(l);
  }
}

// The flash attention kernel in float32 at every level against the float64 math backend: tiles
// with column tails (masked loads and stores), causal diagonals, a bool mask, and the backward.
TEST_F(IsaLevel, FlashAttentionAgreesAtEveryLevel) {
  manual_seed(9);
  const Tensor q = randn({2, 2, 77, 24}), k = randn({2, 2, 141, 24}), v = randn({2, 2, 141, 20});
  const Tensor mask = rand({77, 141}) > 0.2;
  for (bool causal : {false, true}) {
    const Tensor m = causal ? Tensor() : mask;
    Tensor ref, ref_dq;
    {
      nn::attention::sdpa_kernel math({nn::attention::SDPBackend::math});
      Tensor qd = q.to(kFloat64).requires_grad_();
      ref = scaled_dot_product_attention(qd, k.to(kFloat64), v.to(kFloat64), m, 0, causal);
      ref.sum().backward();
      ref_dq = qd.grad();
    }
    for (CpuCapability l : supported_levels()) {
      cpu::set_cpu_capability(l);
      SCOPED_TRACE(std::string(cpu::to_string(l)) + (causal ? " causal" : " masked"));
      nn::attention::sdpa_kernel flash({nn::attention::SDPBackend::flash_attention});
      Tensor qf = q.clone().requires_grad_();
      const Tensor out = scaled_dot_product_attention(qf, k, v, m, 0, causal);
      out.sum().backward();
      EXPECT_TRUE(out.to(kFloat64).allclose(ref, 1e-4, 1e-5));
      EXPECT_TRUE(qf.grad().to(kFloat64).allclose(ref_dq, 1e-3, 1e-4));
    }
  }
}

// The register-blocked float32 kernel (small_gemm.h), called directly (matmul takes it only where
// OpenBLAS lacks vector kernels): every block shape and the column tail, a strided A, alpha and
// beta, against a double-precision loop, at every level.
TEST_F(IsaLevel, SmallGemmMatchesADoubleLoopAtEveryLevel) {
  for (auto [m, n, k] : {std::array<int64_t, 3>{1, 1, 1}, {7, 37, 5}, {9, 64, 33}, {4, 15, 70}}) {
    const Tensor a = randn({k, m}).t();  // A(i, p) at a[i + p * m]: column-major
    const Tensor b = randn({k, n});
    const Tensor c0 = randn({m, n});
    const Tensor expected = (a.to(kFloat64).matmul(b.to(kFloat64)) * 0.5 + c0.to(kFloat64) * 2);
    for (CpuCapability l : supported_levels()) {
      cpu::set_cpu_capability(l);
      Tensor c = c0.clone();
      const cpu::SmallGemm g{m,
                             n,
                             k,
                             a.data_ptr<float>(),
                             a.stride(0),
                             a.stride(1),
                             b.data_ptr<float>(),
                             n,
                             c.data_ptr<float>(),
                             n,
                             0.5f,
                             2.0f};
      cpu::small_sgemm_rows(g, 0, m);
      EXPECT_TRUE(c.to(kFloat64).allclose(expected, 1e-5, 1e-5))
          << cpu::to_string(l) << " m=" << m << " n=" << n << " k=" << k;
      // beta 0 ignores C, NaN included.
      Tensor nan_c = full({m, n}, std::numeric_limits<float>::quiet_NaN());
      const cpu::SmallGemm g0{m,
                              n,
                              k,
                              a.data_ptr<float>(),
                              a.stride(0),
                              a.stride(1),
                              b.data_ptr<float>(),
                              n,
                              nan_c.data_ptr<float>(),
                              n,
                              1.0f,
                              0.0f};
      cpu::small_sgemm_rows(g0, 0, m);
      EXPECT_TRUE(nan_c.to(kFloat64).allclose(a.to(kFloat64).matmul(b.to(kFloat64)), 1e-5, 1e-5))
          << cpu::to_string(l);
    }
  }
}

}  // namespace
}  // namespace kiln
