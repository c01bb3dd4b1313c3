// The compat surface outside the Tensor class: libtorch's macros, c10 utilities, dtype names,
// Scalar accessors, InferenceMode and torch::cuda, spelled as a libtorch program spells them.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <c10/util/Exception.h>
#include <c10/util/irange.h>
#include <string>
#include <type_traits>
#include <vector>

namespace {

template <class Fn>
std::string message_of(Fn&& fn) {
  try {
    fn();
  } catch (const c10::Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(CompatSurface, TorchCheckJoinsMessageParts) {
  const int64_t n = 3;
  EXPECT_EQ(message_of([&] { TORCH_CHECK(n == 4, "expected 4 items, got ", n, " (", 2.5, ")"); }),
            "expected 4 items, got 3 (2.5)");
  EXPECT_EQ(message_of([&] { TORCH_CHECK(n > 5); }), "Expected n > 5 to be true, but got false.");
  EXPECT_EQ(message_of([&] { TORCH_CHECK(n == 3, "unused"); }), "<no error>");
  EXPECT_THROW(TORCH_CHECK(false, "x"), std::exception);
}

TEST(CompatSurface, TypedChecksThrowSubclassesOfError) {
  EXPECT_THROW(TORCH_CHECK_INDEX(false, "i"), c10::IndexError);
  EXPECT_THROW(TORCH_CHECK_VALUE(false, "v"), c10::ValueError);
  EXPECT_THROW(TORCH_CHECK_TYPE(false, "t"), c10::TypeError);
  EXPECT_THROW(TORCH_CHECK_NOT_IMPLEMENTED(false, "n"), c10::NotImplementedError);
  EXPECT_THROW(TORCH_CHECK_INDEX(false, "i"), c10::Error);
  EXPECT_THROW(C10_THROW_ERROR(ValueError, "bad"), kiln::ValueError);
  EXPECT_EQ(message_of([] { TORCH_CHECK_ARG(false, 2, "must be positive"); }),
            "invalid argument 2: must be positive");
}

TEST(CompatSurface, ComparisonChecksShowBothValues) {
  EXPECT_EQ(message_of([] { TORCH_CHECK_EQ(2 + 1, 4); }), "Check failed: 2 + 1 == 4 (3 vs. 4) ");
  EXPECT_EQ(message_of([] { TORCH_CHECK_LT(5, 1); }), "Check failed: 5 < 1 (5 vs. 1) ");
  EXPECT_EQ(message_of([] {
              TORCH_CHECK_GE(1, 1);
              TORCH_CHECK_NE(1, 2);
              TORCH_CHECK_LE(1, 2);
              TORCH_CHECK_GT(2, 1);
            }),
            "<no error>");
}

TEST(CompatSurface, InternalAssertAndAtError) {
  std::string m = message_of([] { TORCH_INTERNAL_ASSERT(1 == 2, "state ", 7); });
  EXPECT_EQ(m.rfind("1 == 2 INTERNAL ASSERT FAILED at \"", 0), 0u) << m;
  EXPECT_NE(m.find("compat_surface_test.cpp\":"), std::string::npos) << m;
  EXPECT_NE(m.find("state 7"), std::string::npos) << m;
  EXPECT_NE(message_of([] { AT_ASSERT(false); }).find("false INTERNAL ASSERT FAILED"),
            std::string::npos);
  EXPECT_EQ(message_of([] { AT_ERROR("mode ", 3, " unsupported"); }), "mode 3 unsupported");
}

TEST(CompatSurface, WarnOnceWarnsOnce) {
  testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) TORCH_WARN_ONCE("careful ", i);
  TORCH_WARN("twice");
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("Warning: careful 0"), std::string::npos) << err;
  EXPECT_EQ(err.find("careful 1"), std::string::npos) << err;
  EXPECT_NE(err.find("Warning: twice"), std::string::npos) << err;
  EXPECT_EQ(err.rfind("[W ", 0), 0u) << err;
}

TEST(CompatSurface, StrAndIrange) {
  EXPECT_EQ(c10::str("a", 1, ' ', 2.5), "a1 2.5");
  EXPECT_EQ(torch::str(), "");
  EXPECT_EQ(at::str(at::IntArrayRef({2, 3})), "[2, 3]");
  std::vector<int64_t> seen;
  for (const auto i : c10::irange(int64_t{4})) seen.push_back(i);
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3}));
  seen.clear();
  for (const auto i : c10::irange(2, 5)) seen.push_back(i);
  EXPECT_EQ(seen, (std::vector<int64_t>{2, 3, 4}));
  int count = 0;
  for (const auto i : c10::irange(5, 2)) count += i + 1;  // empty when end < begin
  EXPECT_EQ(count, 0);
  static_assert(std::is_same_v<decltype(*c10::irange(size_t{3}).begin()), size_t>);
}

TEST(CompatSurface, DtypeNames) {
  static_assert(torch::kF32 == torch::kFloat && torch::kF64 == torch::kDouble);
  static_assert(torch::kF16 == torch::kHalf && torch::kBF16 == torch::kBFloat16);
  static_assert(torch::kI8 == torch::kChar && torch::kI16 == torch::kShort);
  static_assert(torch::kI32 == torch::kInt && torch::kI64 == torch::kLong);
  static_assert(torch::kU8 == torch::kByte);
  static_assert(at::ScalarType::Float == at::kFloat && at::ScalarType::Double == at::kDouble);
  static_assert(c10::ScalarType::Long == at::kLong && c10::ScalarType::Int == at::kInt);
  static_assert(c10::ScalarType::Half == at::kHalf && c10::ScalarType::Byte == at::kByte);
  static_assert(c10::ScalarType::Char == at::kChar && c10::ScalarType::Short == at::kShort);
  EXPECT_EQ(torch::ones({2}, torch::kF64).scalar_type(), torch::ScalarType::Double);
  torch::optional<torch::Dtype> none = torch::nullopt;
  EXPECT_FALSE(none.has_value());
}

TEST(CompatSurface, ScalarAccessors) {
  torch::Scalar f = torch::ones({1}).mul(2.5).item();
  EXPECT_TRUE(f.isFloatingPoint());
  EXPECT_FALSE(f.isIntegral(/*includeBool=*/true));
  EXPECT_DOUBLE_EQ(f.toDouble(), 2.5);
  EXPECT_FLOAT_EQ(f.toFloat(), 2.5f);
  EXPECT_EQ(f.toLong(), 2);
  EXPECT_EQ(f.toInt(), 2);
  EXPECT_TRUE(f.toBool());
  EXPECT_EQ(f.type(), torch::kDouble);
  torch::Scalar i = torch::tensor({7}, torch::kLong).sum().item();
  EXPECT_TRUE(i.isIntegral(false));
  EXPECT_EQ(i.toLong(), 7);
  torch::Scalar b = true;
  EXPECT_TRUE(b.isBoolean());
  EXPECT_FALSE(b.isIntegral(false));
  EXPECT_TRUE(b.isIntegral(true));
  EXPECT_EQ(torch::Scalar(0.0).toBool(), false);
}

TEST(CompatSurface, InferenceModeDisablesGradAndNests) {
  torch::Tensor w = torch::ones({2}, torch::requires_grad());
  EXPECT_FALSE(c10::InferenceMode::is_enabled());
  {
    torch::InferenceMode guard;
    EXPECT_TRUE(c10::InferenceMode::is_enabled());
    EXPECT_FALSE((w * 2).requires_grad());
    {
      c10::InferenceMode off(false);
      EXPECT_FALSE(c10::InferenceMode::is_enabled());
      EXPECT_FALSE((w * 2).requires_grad());  // InferenceMode(false) keeps the outer no-grad
    }
    EXPECT_TRUE(c10::InferenceMode::is_enabled());
  }
  EXPECT_FALSE(c10::InferenceMode::is_enabled());
  EXPECT_TRUE((w * 2).requires_grad());
}

TEST(CompatSurface, CudaAnswersNoGpu) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(torch::cuda::device_count(), 0u);
  EXPECT_FALSE(torch::cuda::cudnn_is_available());
  torch::cuda::manual_seed(1);
  torch::cuda::manual_seed_all(1);
  EXPECT_NO_THROW(torch::cuda::synchronize());
  EXPECT_NE(message_of([] {
              torch::cuda::synchronize(0);
            }).find("cuda::synchronize: device index 0 is out of range (0 CUDA devices"),
            std::string::npos);
}

}  // namespace

namespace {

TEST(CompatSurface, ScalarNarrowConversionsAreChecked) {
  const torch::Scalar s(100);
  EXPECT_EQ(s.toChar(), 100);
  EXPECT_EQ(s.toByte(), 100);
  EXPECT_EQ(s.toShort(), 100);
  EXPECT_EQ(static_cast<float>(torch::Scalar(0.5).toHalf()), 0.5f);
  EXPECT_EQ(static_cast<float>(torch::Scalar(3.0).toBFloat16()), 3.0f);
  EXPECT_THROW(torch::Scalar(300).toChar(), c10::Error);  // out of int8's range, as in c10
  EXPECT_THROW(torch::Scalar(1e6).toHalf(), c10::Error);
}

TEST(CompatSurface, ErrorMsgAndWhatWithoutBacktrace) {
  try {
    TORCH_CHECK(false, "bad value ", 7);
  } catch (const c10::Error& e) {
    EXPECT_EQ(e.msg(), "bad value 7");
    EXPECT_STREQ(e.what_without_backtrace(), "bad value 7");
    return;
  }
  FAIL() << "TORCH_CHECK did not throw";
}

TEST(CompatSurface, ParallelReduceSumsEveryElementOnce) {
  const int64_t n = 100003;
  for (int64_t grain : {1, 1000, 200000}) {
    const int64_t sum = at::parallel_reduce(
        int64_t{0}, n, grain, int64_t{0},
        [](int64_t b, int64_t e, int64_t ident) {
          int64_t s = ident;
          for (int64_t i = b; i < e; ++i) s += i;
          return s;
        },
        [](int64_t a, int64_t b) { return a + b; });
    EXPECT_EQ(sum, n * (n - 1) / 2) << "grain " << grain;
  }
  EXPECT_EQ(at::parallel_reduce(
                int64_t{5}, int64_t{5}, 1, 42.0, [](int64_t, int64_t, double) { return 0.0; },
                [](double a, double b) { return a + b; }),
            42.0);
  EXPECT_EQ(at::get_thread_num(), 0);
}

TEST(CompatSurface, GlobalContextKeepsSettings) {
  auto& ctx = at::globalContext();
  EXPECT_FALSE(ctx.deterministicAlgorithms());
  ctx.setDeterministicAlgorithms(true, /*warn_only=*/true);
  EXPECT_TRUE(ctx.deterministicAlgorithms());
  EXPECT_TRUE(at::globalContext().deterministicAlgorithmsWarnOnly());
  ctx.setDeterministicAlgorithms(false, false);
  ctx.setBenchmarkCuDNN(true);
  EXPECT_TRUE(ctx.benchmarkCuDNN());
  ctx.setBenchmarkCuDNN(false);
  ctx.setFloat32MatmulPrecision("high");
  EXPECT_EQ(ctx.float32MatmulPrecision(), "high");
  EXPECT_THROW(ctx.setFloat32MatmulPrecision("fast"), c10::Error);
  ctx.setFloat32MatmulPrecision("highest");
  EXPECT_FALSE(at::globalContext().hasCUDA());
}

TEST(CompatSurface, FlushDenormalZeroesSubnormalResults) {
  volatile float tiny = 1e-39f, half = 0.5f;  // volatile: computed at run time
  ASSERT_TRUE(at::globalContext().setFlushDenormal(true));
  const float flushed = tiny * half;
  at::globalContext().setFlushDenormal(false);
  const float kept = tiny * half;
  EXPECT_EQ(flushed, 0.0f);
  EXPECT_GT(kept, 0.0f);
}

}  // namespace

namespace {

TEST(CompatSurface, TensorFromThreeAndFourLevelLists) {
  const torch::Tensor t = torch::tensor({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}});
  EXPECT_EQ(t.sizes(), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(t.dtype(), torch::kLong);
  EXPECT_EQ(t[1][0][1].item<int64_t>(), 6);
  const torch::Tensor f = torch::tensor({{{{0.5, 1.5}}}}, torch::kFloat32);
  EXPECT_EQ(f.sizes(), (std::vector<int64_t>{1, 1, 1, 2}));
  EXPECT_EQ(f[0][0][0][1].item<float>(), 1.5f);
  EXPECT_THROW(torch::tensor({{{1, 2}, {3}}}), c10::Error);  // ragged
}

TEST(CompatSurface, ReduceLROnPlateauSchedulerWithLibtorchArguments) {
  torch::Tensor w = torch::zeros({1}, torch::requires_grad());
  torch::optim::SGD sgd({w}, torch::optim::SGDOptions(1.0));
  torch::optim::ReduceLROnPlateauScheduler scheduler(
      sgd, torch::optim::ReduceLROnPlateauScheduler::SchedulerMode::max, /*factor=*/0.5,
      /*patience=*/1);
  for (float metric : {1.0f, 0.5f, 0.5f}) scheduler.step(metric);  // two epochs without a rise
  EXPECT_DOUBLE_EQ(sgd.param_groups()[0].options().get_lr(), 0.5);
  EXPECT_THROW(torch::optim::ReduceLROnPlateauScheduler(
                   sgd, torch::optim::ReduceLROnPlateauScheduler::min, 0.1f, 10, 1e-4,
                   torch::optim::ReduceLROnPlateauScheduler::rel, 0, {0.1f, 0.2f}),
               c10::Error);
}

}  // namespace
