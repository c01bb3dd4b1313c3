// Random ops: the Philox stream (known answers, the element-to-counter mapping, a golden
// prefix), seeding and generators, and statistical checks of every distribution.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "kiln/core/philox.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

// The values of a tensor as doubles, in row-major order (independent of Kiln's reductions).
std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

struct Moments {
  double mean, var, kurtosis;
};
Moments moments(const std::vector<double>& v) {
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double m2 = 0, m4 = 0;
  for (double x : v) {
    const double d = (x - mean) * (x - mean);
    m2 += d;
    m4 += d * d;
  }
  m2 /= static_cast<double>(v.size());
  m4 /= static_cast<double>(v.size());
  return {mean, m2, m4 / (m2 * m2)};
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || !(a.sizes() == b.sizes())) return false;
  Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

// Restores the default generator after each test so tests do not depend on their order.
class Random : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = default_generator().get_state(); }
  void TearDown() override { default_generator().set_state(saved_); }
  GeneratorState saved_;
};

// ---- the Philox stream ----

TEST(Philox, Random123KnownAnswers) {
  auto check = [](philox::Words ctr, uint32_t k0, uint32_t k1, philox::Words expected) {
    philox::Words got = philox::philox4x32_10(ctr, k0, k1);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(got.w[i], expected.w[i]) << "word " << i;
  };
  check({{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}});
  check({{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}}, 0xffffffff, 0xffffffff,
        {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}});
  check({{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}}, 0xa4093822, 0x299f31d0,
        {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}});
}

TEST(Philox, BlockPacksSeedAndCounter) {
  // block(seed, c): counter {lo32(c), hi32(c), 0, 0}, key {lo32(seed), hi32(seed)}.
  const uint64_t seed = 0x0123456789abcdefull, c = 0xfedcba9876543210ull;
  philox::Words a = philox::block(seed, c);
  philox::Words b = philox::philox4x32_10({{0x76543210, 0xfedcba98, 0, 0}}, 0x89abcdef, 0x01234567);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a.w[i], b.w[i]);
}

TEST(Philox, UniformMaps) {
  EXPECT_EQ(philox::uniform_float(0), 0.0f);
  EXPECT_EQ(philox::uniform_float(0xffffffffu), 1.0f - 0x1p-24f);
  EXPECT_EQ(philox::uniform_float<8>(0xffffffffu), 1.0f - 0x1p-8f);
  EXPECT_EQ(philox::uniform_double(0, 0), 0.0);
  EXPECT_EQ(philox::uniform_double(0xffffffffu, 0xffffffffu), 1.0 - 0x1p-53);
  EXPECT_EQ(philox::uniform_double(0, 0x80000000u), 0.5);  // the second word holds the high bits
}

// Pinned from this implementation and cross-checked against an independent Python Philox.
TEST_F(Random, GoldenStreamSeed42) {
  philox::Words b0 = philox::block(42, 0);
  const uint32_t expected_words[4] = {0x9ceaf053u, 0x77f5493bu, 0x12bf50adu, 0x5742b3d7u};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(b0.w[i], expected_words[i]) << "word " << i;

  manual_seed(42);
  std::vector<double> u = values(rand({6}));
  const double expected_u[6] = {0.6129598617553711, 0.4685865044593811, 0.07323169708251953,
                                0.3408614993095398, 0.9877186417579651, 0.32706332206726074};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(u[i], expected_u[i]) << "rand element " << i;

  std::vector<double> n = values(randn({4}, kFloat64));
  const double expected_n[4] = {0.21637628796618585, -1.449453837114188, -1.0808154976343705,
                                1.0261796967639816};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(n[i], expected_n[i], 1e-15) << "randn element " << i;

  std::vector<double> r = values(randint(0, 1000, {5}));
  const double expected_r[5] = {260, 757, 723, 959, 593};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(r[i], expected_r[i]) << "randint element " << i;
}

TEST_F(Random, ElementToCounterMapping) {
  // float32: element i is word i % 4 of block offset + i / 4.
  Generator g(1234);
  g.set_offset(10);
  std::vector<double> f = values(rand({9}, &g));
  for (int i = 0; i < 9; ++i) {
    philox::Words w = philox::block(1234, 10 + i / 4);
    EXPECT_EQ(f[i], philox::uniform_float(w.w[i % 4])) << i;
  }
  EXPECT_EQ(g.get_offset(), 10u + 3u);
  // float64: two words per element, two elements per block.
  std::vector<double> d = values(rand({5}, &g, kFloat64));
  for (int i = 0; i < 5; ++i) {
    philox::Words w = philox::block(1234, 13 + i / 2);
    EXPECT_EQ(d[i], philox::uniform_double(w.w[2 * (i % 2)], w.w[2 * (i % 2) + 1])) << i;
  }
  EXPECT_EQ(g.get_offset(), 13u + 3u);
  // normal: Box-Muller on element pairs of one block.
  std::vector<double> z = values(randn({3}, &g, kFloat64));
  philox::Words w = philox::block(1234, 16);
  double z0, z1;
  philox::box_muller(philox::uniform_double(w.w[0], w.w[1]), philox::uniform_double(w.w[2], w.w[3]),
                     z0, z1);
  EXPECT_EQ(z[0], z0);
  EXPECT_EQ(z[1], z1);
  EXPECT_EQ(g.get_offset(), 16u + 2u);
}

// ---- seeding and generators ----

TEST_F(Random, SameSeedSameTensors) {
  manual_seed(123);
  Tensor a = randn({1000}), b = rand({3, 7}), c = randint(0, 10, {50}), d = randperm(20);
  manual_seed(123);
  EXPECT_TRUE(bitwise_equal(a, randn({1000})));
  EXPECT_TRUE(bitwise_equal(b, rand({3, 7})));
  EXPECT_TRUE(bitwise_equal(c, randint(0, 10, {50})));
  EXPECT_TRUE(bitwise_equal(d, randperm(20)));
}

TEST_F(Random, DifferentSeedsDiffer) {
  manual_seed(1);
  Tensor a = randn({100});
  manual_seed(2);
  Tensor b = randn({100});
  EXPECT_FALSE(bitwise_equal(a, b));
  // Successive draws differ too.
  EXPECT_FALSE(bitwise_equal(randn({100}), randn({100})));
}

TEST_F(Random, ExplicitGeneratorsAreIndependentOfTheDefault) {
  manual_seed(5);
  const GeneratorState before = default_generator().get_state();
  Generator g1(99), g2(99);
  Tensor a = randn({64}, &g1);
  EXPECT_EQ(default_generator().get_state(), before);  // the default one did not move
  EXPECT_TRUE(bitwise_equal(a, randn({64}, &g2)));     // same seed, same stream
  Tensor x = empty({64});
  x.normal_(0, 1, &g1);
  EXPECT_FALSE(bitwise_equal(a, x));  // g1 moved on
  // A generator seeded like the default one reproduces it.
  Generator g3(5);
  EXPECT_TRUE(bitwise_equal(rand({10}, &g3), rand({10})));
}

TEST_F(Random, OffsetAdvancesByBlocksConsumed) {
  Generator g(3);
  EXPECT_EQ(g.get_offset(), 0u);
  rand({10}, &g);  // 10 words -> 3 blocks
  EXPECT_EQ(g.get_offset(), 3u);
  randn({10}, &g, kFloat64);  // 20 words -> 5 blocks
  EXPECT_EQ(g.get_offset(), 8u);
  randint(0, 5, {4}, &g);  // 4 words -> 1 block
  EXPECT_EQ(g.get_offset(), 9u);
  randint(0, int64_t{1} << 40, {4}, &g);  // wide range: 8 words -> 2 blocks
  EXPECT_EQ(g.get_offset(), 11u);
  rand({0}, &g);
  EXPECT_EQ(g.get_offset(), 11u);
}

TEST_F(Random, StateRoundTripsAndCopiesShareState) {
  Generator g(77);
  rand({5}, &g);
  const GeneratorState s = g.get_state();
  EXPECT_EQ(s.seed, 77u);
  Tensor a = randn({16}, &g);
  g.set_state(s);
  EXPECT_TRUE(bitwise_equal(a, randn({16}, &g)));
  Generator shared = g;  // a handle: shares the state
  rand({4}, &shared);
  EXPECT_EQ(g.get_offset(), shared.get_offset());
  Generator copy = g.clone();  // independent
  rand({4}, &copy);
  EXPECT_NE(g.get_offset(), copy.get_offset());
  g.manual_seed(8);
  EXPECT_EQ(g.current_seed(), 8u);
  EXPECT_EQ(g.get_offset(), 0u);
}

TEST_F(Random, ResultDoesNotDependOnThreadCount) {
  const int saved = get_num_threads();
  Generator g(11);
  set_num_threads(1);
  Tensor a = randn({300001}, &g);
  g.set_offset(0);
  set_num_threads(4);
  Tensor b = randn({300001}, &g);
  set_num_threads(saved);
  EXPECT_TRUE(bitwise_equal(a, b));
}

TEST_F(Random, StridedFillFollowsRowMajorOrder) {
  Generator g(21);
  Tensor expected = randn({3, 4}, &g);
  g.set_offset(0);
  Tensor x = empty({4, 3}).t();  // 3x4, not contiguous
  x.normal_(0, 1, &g);
  EXPECT_TRUE(bitwise_equal(x, expected));
}

TEST_F(Random, MetaModeAndErrorsLeaveTheGeneratorUntouched) {
  Generator g(4);
  {
    ModeGuard guard(std::make_shared<MetaMode>());
    Tensor m = randn({100}, &g);
    EXPECT_TRUE(m.is_meta());
  }
  EXPECT_EQ(g.get_offset(), 0u);
  EXPECT_THROW(bernoulli(tensor({0.5, 1.5}), &g), Error);
  EXPECT_EQ(g.get_offset(), 0u);
  EXPECT_THROW(multinomial(tensor({0.0, 0.0}), 1, true, &g), Error);
  EXPECT_EQ(g.get_offset(), 0u);
}

// ---- distributions ----

TEST_F(Random, NormalMeanAndStd) {
  manual_seed(0);
  for (ScalarType dt : {kFloat32, kFloat64}) {
    Moments m = moments(values(randn({1 << 20}, dt)));
    EXPECT_NEAR(m.mean, 0.0, 0.005) << dt;
    EXPECT_NEAR(std::sqrt(m.var), 1.0, 0.005) << dt;
    EXPECT_NEAR(m.kurtosis, 3.0, 0.05) << dt;
  }
  Tensor x = empty({1 << 20}, kFloat64);
  x.normal_(3.0, 2.0);
  Moments m = moments(values(x));
  EXPECT_NEAR(m.mean, 3.0, 0.01);
  EXPECT_NEAR(std::sqrt(m.var), 2.0, 0.01);
  Moments h = moments(values(normal(-1.0, 0.5, {1 << 16}, nullptr, kBFloat16)));
  EXPECT_NEAR(h.mean, -1.0, 0.02);
  EXPECT_NEAR(std::sqrt(h.var), 0.5, 0.02);
}

TEST_F(Random, UniformRangeAndMean) {
  manual_seed(0);
  for (ScalarType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    std::vector<double> v = values(rand({1 << 20}, dt));
    EXPECT_GE(*std::min_element(v.begin(), v.end()), 0.0) << dt;
    EXPECT_LT(*std::max_element(v.begin(), v.end()), 1.0) << dt;
    Moments m = moments(v);
    EXPECT_NEAR(m.mean, 0.5, 0.0025) << dt;
    EXPECT_NEAR(m.var, 1.0 / 12, 0.002) << dt;
  }
  Tensor x = empty({100000});
  x.uniform_(-2, 5);
  std::vector<double> v = values(x);
  EXPECT_GE(*std::min_element(v.begin(), v.end()), -2.0);
  EXPECT_LT(*std::max_element(v.begin(), v.end()), 5.0);
  EXPECT_NEAR(moments(v).mean, 1.5, 0.03);
}

TEST_F(Random, ExponentialMean) {
  manual_seed(0);
  Tensor x = empty({1 << 20}, kFloat64);
  x.exponential_(4.0);
  std::vector<double> v = values(x);
  EXPECT_GE(*std::min_element(v.begin(), v.end()), 0.0);
  Moments m = moments(v);
  EXPECT_NEAR(m.mean, 0.25, 0.002);
  EXPECT_NEAR(std::sqrt(m.var), 0.25, 0.002);
}

TEST_F(Random, BernoulliFrequency) {
  manual_seed(0);
  for (ScalarType dt : {kFloat32, kFloat64, kInt64, kBool}) {
    Tensor x = empty({1 << 20}, dt);
    x.bernoulli_(0.3);
    std::vector<double> v = values(x);
    double ones = 0;
    for (double e : v) {
      ASSERT_TRUE(e == 0 || e == 1);
      ones += e;
    }
    EXPECT_NEAR(ones / static_cast<double>(v.size()), 0.3, 0.003) << dt;
  }
  // Tensor probabilities: 0 and 1 are certain, 0.5 is a coin.
  std::vector<double> p;
  for (int i = 0; i < 30000; ++i) p.push_back(i % 3 * 0.5);
  std::vector<double> b = values(bernoulli(tensor(p, kFloat64)));
  double heads = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0.5) {
      heads += b[i];
    } else {
      ASSERT_EQ(b[i], p[i]);  // probability 0 or 1: certain
    }
  }
  EXPECT_NEAR(heads / 10000, 0.5, 0.02);
  Tensor like = bernoulli(zeros({5, 5}), 1.0);
  EXPECT_EQ(like.dtype(), get_default_dtype());
  for (double e : values(like)) EXPECT_EQ(e, 1);
}

TEST_F(Random, RandintBounds) {
  manual_seed(0);
  std::vector<double> v = values(randint(-3, 5, {80000}));
  std::vector<int> counts(8, 0);
  for (double e : v) {
    ASSERT_GE(e, -3);
    ASSERT_LT(e, 5);
    ASSERT_EQ(e, std::floor(e));
    ++counts[static_cast<int>(e) + 3];
  }
  for (int c : counts) EXPECT_NEAR(c / 80000.0, 1.0 / 8, 0.006);
  // A range wider than 32 bits uses 64 random bits.
  const int64_t hi = int64_t{1} << 40;
  Tensor w = randint(0, hi, {1000});
  const int64_t* p = w.data_ptr<int64_t>();
  int64_t above32 = 0;
  for (int i = 0; i < 1000; ++i) {
    ASSERT_GE(p[i], 0);
    ASSERT_LT(p[i], hi);
    above32 += p[i] >= (int64_t{1} << 32);
  }
  EXPECT_GT(above32, 900);
  EXPECT_EQ(randint(10, {2, 3}).dtype(), kInt64);
  EXPECT_EQ(randint(10, {2, 3}, kFloat32).dtype(), kFloat32);
  Tensor x = empty({1000}, kUInt8);
  x.random_(250, 256);
  for (double e : values(x)) ASSERT_TRUE(e >= 250 && e < 256);
  Tensor bits = empty({1000}, kBool);
  bits.random_(0, 2);
  double ones = 0;
  for (double e : values(bits)) ones += e;
  EXPECT_NEAR(ones / 1000, 0.5, 0.08);
}

TEST_F(Random, RandpermIsAPermutation) {
  manual_seed(0);
  for (int64_t n : {0, 1, 2, 10, 100000}) {
    std::vector<double> v = values(randperm(n));
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[i], static_cast<double>(i)) << n;
  }
  EXPECT_EQ(randperm(5).dtype(), kInt64);
  EXPECT_EQ(randperm(5, kInt32).dtype(), kInt32);
  // Every position is uniform: the first element of randperm(4) hits each value ~1/4.
  std::vector<int> first(4, 0);
  for (int t = 0; t < 4000; ++t) ++first[static_cast<int>(values(randperm(4))[0])];
  for (int c : first) EXPECT_NEAR(c / 4000.0, 0.25, 0.03);
}

TEST_F(Random, MultinomialWithReplacementFrequencies) {
  manual_seed(0);
  Tensor probs = tensor({1.0, 2.0, 0.0, 3.0, 4.0});  // unnormalised; category 2 impossible
  std::vector<double> s = values(multinomial(probs, 200000, /*replacement=*/true));
  std::vector<double> freq(5, 0);
  for (double e : s) freq[static_cast<int>(e)] += 1.0 / 200000;
  EXPECT_NEAR(freq[0], 0.1, 0.004);
  EXPECT_NEAR(freq[1], 0.2, 0.004);
  EXPECT_EQ(freq[2], 0.0);
  EXPECT_NEAR(freq[3], 0.3, 0.004);
  EXPECT_NEAR(freq[4], 0.4, 0.004);
}

TEST_F(Random, MultinomialWithoutReplacement) {
  manual_seed(0);
  Tensor probs = tensor({{1.0, 2.0, 0.0, 3.0, 4.0}, {5.0, 1.0, 1.0, 1.0, 1.0}});
  std::vector<double> first_counts(5, 0);
  for (int t = 0; t < 4000; ++t) {
    Tensor s = multinomial(probs, 4);
    ASSERT_EQ(s.sizes().vec(), (std::vector<int64_t>{2, 4}));
    ASSERT_EQ(s.dtype(), kInt64);
    std::vector<double> v = values(s);
    std::set<double> row0(v.begin(), v.begin() + 4), row1(v.begin() + 4, v.end());
    ASSERT_EQ(row0.size(), 4u);  // no repeats
    ASSERT_EQ(row1.size(), 4u);
    ASSERT_EQ(row0.count(2), 0u);  // zero probability never drawn
    first_counts[static_cast<int>(v[0])] += 1.0 / 4000;
  }
  // The first draw follows the probabilities.
  EXPECT_NEAR(first_counts[0], 0.1, 0.025);
  EXPECT_NEAR(first_counts[1], 0.2, 0.025);
  EXPECT_NEAR(first_counts[3], 0.3, 0.025);
  EXPECT_NEAR(first_counts[4], 0.4, 0.025);
  // All categories: a permutation.
  std::vector<double> all = values(multinomial(tensor({1.0, 1.0, 1.0}), 3));
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<double>{0, 1, 2}));
}

TEST_F(Random, LikeFactories) {
  Tensor t = zeros({2, 3}, kFloat64);
  EXPECT_EQ(rand_like(t).sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(rand_like(t).dtype(), kFloat64);
  EXPECT_EQ(randn_like(t, kFloat32).dtype(), kFloat32);
  Tensor r = randint_like(t, 3, 7);
  EXPECT_EQ(r.dtype(), kFloat64);
  for (double e : values(r)) EXPECT_TRUE(e >= 3 && e < 7 && e == std::floor(e));
  for (double e : values(randint_like(zeros({10}, kInt32), 2))) EXPECT_TRUE(e == 0 || e == 1);
  EXPECT_TRUE(randn({2}, requires_grad()).requires_grad());
}

TEST_F(Random, Errors) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([] { rand({2}, kInt64); }), "rand: expected a floating point dtype, got int64");
  EXPECT_EQ(message([] {
              randn({-1, 2});
            }),
            "randn: Trying to create tensor with negative dimension -1: [-1, 2]");
  EXPECT_EQ(message([] { randint(5, 5, {2}); }),
            "randint: expects 'from' to be less than 'to', but got from=5 >= to=5");
  EXPECT_EQ(message([] { randint(0, 300, {2}, kUInt8); }),
            "randint: the range [0, 300) is out of bounds for dtype uint8");
  EXPECT_EQ(message([] { empty({2}).normal_(0, -1); }),
            "normal_: expects std >= 0.0, but found std -1");
  EXPECT_EQ(message([] { empty({2}).uniform_(2, 1); }),
            "uniform_: expects to return a [from, to) range, but found from=2 > to=1");
  EXPECT_EQ(message([] { empty({2}).exponential_(0); }),
            "exponential_: expects lambda > 0.0, but found lambda=0");
  EXPECT_EQ(message([] { empty({2}).bernoulli_(1.5); }),
            "bernoulli_: expects p to be in [0, 1], but got p=1.5");
  EXPECT_EQ(message([] {
              bernoulli(tensor({0.5, -0.5}));
            }),
            "bernoulli: expected all probabilities in [0, 1], but found -0.5");
  EXPECT_EQ(message([] { randperm(-1); }), "randperm: n must be non-negative, got -1");
  EXPECT_EQ(message([] { randperm(300, kUInt8); }),
            "randperm: n=300 is too large for result tensor type uint8");
  EXPECT_EQ(message([] {
              multinomial(tensor({1.0, 2.0}), 3);
            }),
            "multinomial: cannot sample n_sample > prob_dist.size(-1) samples without "
            "replacement (got 3 > 2)");
  EXPECT_EQ(message([] {
              multinomial(tensor({1.0, 2.0}), 0, true);
            }),
            "multinomial: cannot sample n_sample <= 0 samples (got 0)");
  EXPECT_EQ(message([] {
              multinomial(tensor({1.0, -2.0}), 1, true);
            }),
            "multinomial: probability tensor contains either `inf`, `nan` or element < 0 (got -2 "
            "in row 0)");
  EXPECT_EQ(message([] {
              multinomial(tensor({1.0, 0.0, 0.0}), 2);
            }),
            "multinomial: invalid multinomial distribution (with replacement=False, not enough "
            "non-negative category to sample: 1 in row 0 for 2 samples)");
  EXPECT_EQ(message([] {
              multinomial(zeros({2, 2, 2}), 1);
            }),
            "multinomial: prob_dist must be 1 or 2 dim, got 3 dims (shape [2, 2, 2])");
  EXPECT_EQ(message([] {
              multinomial(tensor({1, 2}), 1);
            }),
            "multinomial: only supports floating-point dtypes for input, got: int64");
}

}  // namespace
}  // namespace kiln
