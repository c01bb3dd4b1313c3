// The CUDA random kernels. Without a GPU: every generated source variant compiles with NVRTC. On a
// GPU: each op draws the CPU's numbers for the same seed (integers, masks and uniforms exactly;
// values through log, sin and cos within a few ulps), on every layout, and leaves the CUDA
// generator where the CPU op leaves the CPU's.
#include <functional>
#include <limits>

#include "kiln/backend/cuda/random.h"
#include "kiln/ops/registry.h"
#include "tests/cuda/cuda_test_util.h"

namespace kiln {
namespace {

using cuda::RandomKernel;

const std::vector<ScalarType> kFloating{kFloat64, kFloat32, kFloat16, kBFloat16};
const std::vector<ScalarType> kAll{kFloat64, kFloat32, kFloat16, kBFloat16, kInt64,
                                   kInt32,   kInt16,   kInt8,    kUInt8,    kBool};

TEST(CudaRandomSource, EveryVariantCompiles) {
  int n = 0;
  const std::pair<RandomKernel, const std::vector<ScalarType>*> kinds[] = {
      {RandomKernel::Uniform, &kFloating},      {RandomKernel::Normal, &kFloating},
      {RandomKernel::Exponential, &kFloating},  {RandomKernel::Integers, &kAll},
      {RandomKernel::Bernoulli, &kAll},         {RandomKernel::BernoulliTensor, &kFloating},
      {RandomKernel::DropoutNoise, &kFloating},
  };
  for (const auto& [kind, dtypes] : kinds)
    for (ScalarType dt : *dtypes)
      for (int words : {1, 2}) {
        const std::string name = "kiln_test_random_" + std::to_string(static_cast<int>(kind)) +
                                 "_" + std::string(dtype_name(dt)) + "_w" + std::to_string(words);
        testing::expect_ptx_compiles(cuda::random_source(kind, dt, words, name), name), ++n;
      }
  for (ScalarType dt : kFloating)
    for (bool alpha : {false, true}) {
      const std::string name =
          "kiln_test_dropout_apply_" + std::string(dtype_name(dt)) + (alpha ? "_alpha" : "_plain");
      testing::expect_ptx_compiles(cuda::dropout_apply_source(dt, alpha, name), name), ++n;
    }
  EXPECT_EQ(n, 2 * (5 * 4 + 2 * 10) + 8);
  EXPECT_THROW(cuda::random_source(RandomKernel::Normal, kInt64, 1, "k"), Error);
  EXPECT_THROW(cuda::random_source(RandomKernel::Uniform, kFloat32, 3, "k"), Error);
  EXPECT_THROW(cuda::dropout_apply_source(kInt32, false, "k"), Error);
}

// What a GPU run must match the CPU to: 0 is exactly.
double tolerance(ScalarType dt) { return dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 1e-5 : 1e-2; }

void expect_matches(const Tensor& device, const Tensor& host, double tol, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(device.is_cuda());
  ASSERT_EQ(device.sizes().vec(), host.sizes().vec());
  const Tensor d = device.cpu();
  if (tol == 0)
    EXPECT_TRUE(equal(d, host)) << d << "\n" << host;
  else
    EXPECT_TRUE(allclose(d.to(kFloat64), host.to(kFloat64), tol, tol)) << d << "\n" << host;
}

void expect_native(std::initializer_list<const char*> ops) {
  for (const char* op : ops) EXPECT_FALSE(testing::fell_back(op)) << op << " fell back";
}

GeneratorState cuda_state() { return default_generator(Device(kCUDA, 0)).get_state(); }
GeneratorState cpu_state() { return default_generator().get_state(); }

// fill on a CPU tensor and on a CUDA tensor of the same sizes and layout after the same seed, twice
// in a row (the second draw starts where the first left the stream): the values match within tol
// and both generators end at the same offset.
void expect_fills_match(ScalarType dt, double tol, const std::function<void(Tensor&)>& fill) {
  for (const std::vector<int64_t>& sizes :
       {std::vector<int64_t>{9, 7}, std::vector<int64_t>{}, std::vector<int64_t>{0, 3}})
    for (bool transposed : {false, true}) {
      if (transposed && sizes.size() != 2) continue;
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + std::to_string(sizes.size()) + "-dim" +
                   (transposed ? " transposed" : ""));
      Tensor host = zeros(sizes, dt), device = zeros(sizes, TensorOptions(dt).device(kCUDA));
      if (transposed) host = host.t(), device = device.t();
      manual_seed(11);
      fill(host);
      const Tensor host_first = host.clone();
      fill(host);
      const GeneratorState host_state = cpu_state();
      manual_seed(11);
      fill(device);
      const Tensor device_first = device.clone();
      fill(device);
      expect_matches(device_first, host_first, tol, "first draw");
      expect_matches(device, host, tol, "second draw");
      EXPECT_EQ(cuda_state(), host_state);
    }
}

TEST(CudaRandom, InPlaceFillsMatchTheCpu) {
  REQUIRE_GPU();
  for (ScalarType dt : kFloating) {
    expect_fills_match(dt, 0, [](Tensor& t) { t.uniform_(-2, 5); });
    expect_fills_match(dt, tolerance(dt), [](Tensor& t) { t.normal_(1, 2); });
    expect_fills_match(dt, tolerance(dt), [](Tensor& t) { t.exponential_(2); });
  }
  for (ScalarType dt : kAll) {
    expect_fills_match(dt, 0, [](Tensor& t) { t.bernoulli_(0.3); });
    const bool small = dt == kBool || dt == kUInt8 || dt == kInt8;
    expect_fills_match(dt, 0, [small](Tensor& t) { t.random_(small ? 0 : -3, small ? 2 : 100); });
  }
  // A range wider than 2^32 takes two words per element.
  constexpr int64_t kWide = std::numeric_limits<int64_t>::max() / 2;
  expect_fills_match(kInt64, 0, [](Tensor& t) { t.random_(-kWide, kWide); });
  expect_native({"uniform_", "normal_", "exponential_", "bernoulli_", "random_"});
}

TEST(CudaRandom, FactoriesMatchTheCpu) {
  REQUIRE_GPU();
  const TensorOptions cuda(Device(kCUDA, 0));
  for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{5, 3}, std::vector<int64_t>{},
                                            std::vector<int64_t>{7}, std::vector<int64_t>{0, 4}}) {
    SCOPED_TRACE(std::to_string(sizes.size()) + "-dim");
    for (ScalarType dt : kFloating) {
      manual_seed(3);
      const Tensor u = rand(sizes, dt), z = randn(sizes, dt);
      const GeneratorState host_state = cpu_state();
      manual_seed(3);
      expect_matches(rand(sizes, cuda.dtype(dt)), u, 0, "rand");
      expect_matches(randn(sizes, cuda.dtype(dt)), z, tolerance(dt), "randn");
      EXPECT_EQ(cuda_state(), host_state);
    }
    for (ScalarType dt : {kInt64, kInt32, kFloat32, kFloat64}) {
      manual_seed(4);
      const Tensor i = randint(-3, 5, sizes, dt);
      const GeneratorState host_state = cpu_state();
      manual_seed(4);
      expect_matches(randint(-3, 5, sizes, cuda.dtype(dt)), i, 0, "randint");
      EXPECT_EQ(cuda_state(), host_state);
    }
  }
  expect_native({"rand", "randn", "randint"});
}

TEST(CudaRandom, AGeneratorGivenToTheOpIsTheOneThatAdvances) {
  REQUIRE_GPU();
  manual_seed(1);
  const GeneratorState device_default = cuda_state();
  Generator host_gen(1234);
  Generator device_gen = host_gen.clone();
  Tensor host = empty({31}, kFloat32), device = empty({31}, TensorOptions(kFloat32).device(kCUDA));
  host.uniform_(0, 1, &host_gen);
  device.uniform_(0, 1, &device_gen);
  expect_matches(device, host, 0, "uniform_ with a generator");
  EXPECT_EQ(device_gen.get_state(), host_gen.get_state());
  EXPECT_EQ(cuda_state(), device_default);
}

TEST(CudaRandom, BernoulliOfProbabilitiesMatchesTheCpu) {
  REQUIRE_GPU();
  for (ScalarType dt : kFloating) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor probs = rand({11, 7}, dt).t();  // not contiguous
    const Tensor device_probs = probs.cuda().t().contiguous().t();
    manual_seed(8);
    const Tensor host = bernoulli(probs);
    const GeneratorState host_state = cpu_state();
    manual_seed(8);
    expect_matches(bernoulli(device_probs), host, 0, "bernoulli");
    EXPECT_EQ(cuda_state(), host_state);
  }
  expect_native({"bernoulli"});
  // A probability outside [0, 1] is the CPU kernel's error, raised before the draw.
  manual_seed(8);
  const GeneratorState before = cuda_state();
  const std::string error = testing::error_of([] { bernoulli(tensor({0.5, 1.5}).cuda()); });
  EXPECT_TRUE(testing::has(error, "expected all probabilities in [0, 1], but found 1.5")) << error;
  EXPECT_EQ(cuda_state(), before);
}

TEST(CudaRandom, DropoutNoiseAndOutputMatchTheCpu) {
  REQUIRE_GPU();
  static const OpDef& op = get_op("native_dropout");
  for (ScalarType dt : kFloating)
    for (int64_t mode : {0, 1, 2, 3})  // plain, feature, alpha, feature alpha
      for (double p : {0.3, 1.0}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " mode " + std::to_string(mode) +
                     " p=" + std::to_string(p));
        const Tensor x = (randn({5, 3, 4, 2}) * 2).to(dt).transpose(1, 3);  // not contiguous
        manual_seed(9);
        const std::vector<Tensor> host = call_op(op, {x}, {p, mode, std::monostate{}});
        const GeneratorState host_state = cpu_state();
        const Tensor device_x = x.cuda();
        manual_seed(9);
        const std::vector<Tensor> device = call_op(op, {device_x}, {p, mode, std::monostate{}});
        expect_matches(device[1], host[1], 0, "noise");
        expect_matches(device[0], host[0], 0, "output");
        EXPECT_EQ(cuda_state(), host_state);
      }
  expect_native({"native_dropout"});
}

}  // namespace
}  // namespace kiln
