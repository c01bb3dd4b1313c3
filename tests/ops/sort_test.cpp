// Sorting and selection beyond the op table: the positions PyTorch's CPU kernels report on ties
// (values below were printed by PyTorch 2.x on the CPU), NaN ordering, PyTorch's documented
// examples, error messages, large inputs on the radix and selection paths, and gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

using V = std::vector<double>;
constexpr double kNaN = NAN;

template <class F>
void expect_error(F f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing: " << part;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << part;
  }
}

V values(const Tensor& t) {
  Tensor d = t.detach().to(kFloat64).contiguous();
  return V(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

void expect_values(const Tensor& t, const V& want) {
  V got = values(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i << ": got " << got[i];
    } else {
      EXPECT_EQ(got[i], want[i]) << "at " << i;
    }
  }
}

// [3, 0, 2, 4, 1, 3, 0, 2, 4, 1, ...]: 40 elements, each value 8 times.
Tensor tied40() {
  V v;
  for (int i = 0; i < 40; ++i) v.push_back((i * 7 + 3) % 5);
  return tensor(v, TensorOptions(kFloat32));
}

TEST(Sort, StableOnTiesAscendingAndDescending) {
  Tensor x = tensor({3.0, 1.0, 2.0, 1.0, 3.0, 2.0, 1.0});
  auto [v, i] = x.sort();
  expect_values(v, {1, 1, 1, 2, 2, 3, 3});
  expect_values(i, {1, 3, 6, 2, 5, 0, 4});
  auto [vd, id] = x.sort(/*dim=*/0, /*descending=*/true);
  expect_values(vd, {3, 3, 2, 2, 1, 1, 1});
  expect_values(id, {0, 4, 2, 5, 1, 3, 6});
  expect_values(x.argsort(/*stable=*/true, 0, true), {0, 4, 2, 5, 1, 3, 6});
}

TEST(Sort, NaNSortsAsLargest) {
  Tensor x = tensor({1.0, kNaN, 0.0, kNaN, 2.0});
  auto [v, i] = sort(x);
  expect_values(v, {0, 1, 2, kNaN, kNaN});
  expect_values(i, {2, 0, 4, 1, 3});
  auto [vd, id] = sort(x, 0, true);
  expect_values(vd, {kNaN, kNaN, 2, 1, 0});
  expect_values(id, {1, 3, 4, 0, 2});
}

TEST(Sort, LongRowsOnTheRadixPathMatchStableSort) {
  for (ScalarType dt : {kFloat32, kFloat64, kInt32, kInt64, kBFloat16, kInt8, kUInt8}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> d(0, 99);
    V v(5000);
    for (auto& e : v) e = d(rng) - (dt == kUInt8 ? 0 : 50);
    Tensor x = tensor(v).to(dt);
    for (bool descending : {false, true}) {
      auto [sv, si] = x.sort(true, 0, descending);
      V got = values(si);
      for (size_t k = 1; k < got.size(); ++k) {
        const double a = v[got[k - 1]], b = v[got[k]];
        ASSERT_TRUE(descending ? a >= b : a <= b) << "order at " << k;
        if (a == b) {
          ASSERT_LT(got[k - 1], got[k]) << "stability at " << k;
        }
      }
    }
  }
}

TEST(Sort, AlongEveryDimOfA3dTensor) {
  Tensor x = tensor({5.0, 1.0, 4.0, 2.0, 8.0, 3.0, 7.0, 6.0}).reshape({2, 2, 2});
  expect_values(std::get<1>(x.sort(0)), {0, 0, 0, 0, 1, 1, 1, 1});
  expect_values(std::get<0>(x.sort(1)), {4, 1, 5, 2, 7, 3, 8, 6});
  expect_values(std::get<0>(x.sort(2, true)), {5, 1, 4, 2, 8, 3, 7, 6});
}

TEST(Topk, TiesPickTheSamePositionsAsPyTorch) {
  Tensor x = tensor({3.0, 1.0, 2.0, 1.0, 3.0, 2.0, 1.0});
  expect_values(std::get<1>(x.topk(3)), {4, 0, 5});
  expect_values(std::get<1>(x.topk(3, 0, /*largest=*/false)), {3, 6, 1});
  expect_values(std::get<1>(x.topk(2)), {4, 0});
  Tensor t = tied40();
  expect_values(std::get<1>(t.topk(5)), {23, 18, 8, 33, 3});
  expect_values(std::get<1>(t.topk(5, 0, false)), {21, 6, 26, 1, 11});
  auto [uv, ui] = t.topk(15, 0, true, /*sorted=*/false);
  expect_values(ui, {0, 25, 28, 3, 38, 23, 20, 30, 8, 18, 15, 33, 13, 10, 5});
  expect_values(uv, {3, 3, 4, 4, 4, 4, 3, 3, 4, 4, 3, 4, 4, 3, 3});
  V y;  // k * 64 <= n: the partial-sort path
  for (int i = 0; i < 300; ++i) y.push_back((i * 13 + 1) % 7);
  Tensor yt = tensor(y);
  expect_values(std::get<1>(yt.topk(3)), {16, 9, 2});
  expect_values(std::get<1>(yt.topk(4, 0, false)), {15, 1, 22, 8});
}

TEST(Topk, UnsortedAndNaN) {
  auto [v, i] = tensor({5.0, 1.0, 4.0, 2.0, 3.0, 0.0}).topk(3, 0, true, false);
  expect_values(v, {4, 5, 3});
  expect_values(i, {2, 0, 4});
  Tensor n = tensor({1.0, kNaN, 0.0, kNaN, 2.0});
  expect_values(std::get<1>(n.topk(2)), {1, 3});
  expect_values(std::get<1>(n.topk(2, 0, false)), {2, 0});
}

TEST(Topk, MatchesSortOnWideRows) {
  Tensor x = samples::make({16, 4096}, kFloat32);
  for (int64_t k : {10, 100}) {
    auto [v, i] = x.topk(k);
    auto [sv, si] = x.sort(-1, true);
    expect_values(v, values(sv.narrow(1, 0, k)));
    const V all = values(x), got = values(i), want = values(v);
    for (size_t e = 0; e < got.size(); ++e)  // each index points at its value
      ASSERT_EQ(all[(e / k) * 4096 + static_cast<size_t>(got[e])], want[e]) << e;
  }
}

TEST(Kthvalue, TiesPickTheSamePositionsAsPyTorch) {
  Tensor x = tensor({3.0, 1.0, 2.0, 1.0, 3.0, 2.0, 1.0});
  const std::vector<std::pair<int64_t, int64_t>> small = {{1, 1}, {2, 3}, {4, 5}, {7, 0}};
  for (auto [k, at] : small) EXPECT_EQ(std::get<1>(x.kthvalue(k)).item<int64_t>(), at) << k;
  Tensor t = tied40();
  const std::vector<std::pair<int64_t, int64_t>> large = {{1, 1},  {7, 31},  {13, 14},
                                                          {20, 2}, {33, 18}, {40, 13}};
  for (auto [k, at] : large) EXPECT_EQ(std::get<1>(t.kthvalue(k)).item<int64_t>(), at) << k;
  Tensor n = tensor({1.0, kNaN, 0.0, kNaN, 2.0});
  EXPECT_EQ(std::get<1>(n.kthvalue(4)).item<int64_t>(), 1);
  EXPECT_EQ(std::get<1>(n.kthvalue(5)).item<int64_t>(), 3);
}

TEST(Median, LowerMedianAndStableIndex) {
  Tensor x = tensor({3.0, 1.0, 2.0, 1.0, 3.0, 2.0, 1.0});
  EXPECT_EQ(x.median().item<double>(), 2.0);
  EXPECT_EQ(std::get<1>(x.median(0)).item<int64_t>(), 2);
  Tensor even = tensor({4.0, 1.0, 3.0, 2.0});
  EXPECT_EQ(even.median().item<double>(), 2.0);
  EXPECT_EQ(std::get<1>(even.median(0)).item<int64_t>(), 3);
  EXPECT_EQ(std::get<1>(tied40().median(0)).item<int64_t>(), 17);
  Tensor n = tensor({1.0, kNaN, 0.0, kNaN, 2.0});
  EXPECT_TRUE(std::isnan(n.median().item<double>()));
  EXPECT_EQ(std::get<1>(n.median(0)).item<int64_t>(), 1);
  EXPECT_TRUE(std::isnan(empty({0}).median().item<double>()));
  auto [v, i] = tensor({{1.0, 5.0, 3.0}, {9.0, 7.0, 8.0}}).median(1, /*keepdim=*/true);
  EXPECT_EQ(v.sizes().vec(), (std::vector<int64_t>{2, 1}));
  expect_values(v, {3, 8});
  expect_values(i, {2, 2});
}

TEST(Mode, MostFrequentSmallestValueAndPyTorchsIndex) {
  auto check = [](const Tensor& x, double value, int64_t at) {
    auto [v, i] = x.mode();
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(v.item<double>()));
    } else {
      EXPECT_EQ(v.item<double>(), value);
    }
    EXPECT_EQ(i.item<int64_t>(), at);
  };
  check(tensor({3.0, 1.0, 2.0, 1.0, 3.0, 2.0, 1.0}), 1, 6);
  check(tensor({2.0, 1.0, 2.0, 1.0, 3.0}), 1, 3);
  check(tensor({5.0, 5.0, 1.0, 1.0, 1.0, 5.0}), 1, 4);
  check(tensor({1.0, kNaN, 0.0, kNaN, 2.0}), 0, 2);
  check(tensor({1.0, 0.0, 1.0, kNaN, 1.0}), 1, 2);  // NaN splits the run of 1s
  check(tensor({kNaN, 1.0, kNaN, 0.0}), kNaN, 0);
  check(tied40(), 0, 16);
  V z;
  for (int i = 0; i < 37; ++i) z.push_back((i * i + 3) % 6);
  check(tensor(z), 1, 22);
}

TEST(CumExtreme, TiesTakeTheLaterIndexAndNaNStays) {
  auto [v, i] = tensor({1.0, 3.0, 3.0, 2.0, 5.0, 5.0}).cummax(0);
  expect_values(v, {1, 3, 3, 3, 5, 5});
  expect_values(i, {0, 1, 2, 2, 4, 5});
  auto [mv, mi] = tensor({3.0, 1.0, 1.0, 2.0, 0.0, 0.0}).cummin(0);
  expect_values(mv, {3, 1, 1, 1, 0, 0});
  expect_values(mi, {0, 1, 2, 2, 4, 5});
  auto [nv, ni] = tensor({1.0, kNaN, 3.0, kNaN}).cummax(0);
  expect_values(nv, {1, kNaN, kNaN, kNaN});
  expect_values(ni, {0, 1, 1, 3});
  auto [iv, ii] = tensor({1, 3, 2}).cummax(0);
  EXPECT_EQ(iv.dtype(), kInt64);
  expect_values(iv, {1, 3, 3});
  expect_values(ii, {0, 1, 1});
}

TEST(Unique, SortedWithInverseAndCounts) {
  auto [u, inv, counts] = unique(tensor({2, 1, 3, 1, 2, 2}), true, true, true);
  expect_values(u, {1, 2, 3});
  expect_values(inv, {1, 0, 2, 0, 1, 1});
  expect_values(counts, {2, 3, 1});
  auto [u2, inv2, c2] = unique(tensor({2, 1}));
  expect_values(u2, {1, 2});
  EXPECT_EQ(inv2.sizes().vec(), std::vector<int64_t>{0});
  EXPECT_EQ(c2.sizes().vec(), std::vector<int64_t>{0});
  auto [un, invn, cn] = unique(tensor({2.0, kNaN, 1.0, kNaN}), true, true, true);
  expect_values(un, {1, 2, kNaN, kNaN});
  expect_values(invn, {1, 2, 0, 3});
  expect_values(cn, {1, 1, 1, 1});
  auto [um, invm, cm] = unique(tensor({{1, 3}, {3, 1}}), true, true, false);
  EXPECT_EQ(invm.sizes().vec(), (std::vector<int64_t>{2, 2}));
  expect_values(invm, {0, 1, 1, 0});
}

TEST(UniqueConsecutive, FlattenedAndAlongADim) {
  auto [u, inv, counts] = unique_consecutive(tensor({1, 1, 2, 2, 3, 1, 1, 2}), true, true);
  expect_values(u, {1, 2, 3, 1, 2});
  expect_values(inv, {0, 0, 1, 1, 2, 3, 3, 4});
  expect_values(counts, {2, 2, 1, 2, 1});
  auto [ud, invd, cd] = unique_consecutive(tensor({{1, 1}, {1, 1}, {2, 3}}), true, true, 0);
  EXPECT_EQ(ud.sizes().vec(), (std::vector<int64_t>{2, 2}));
  expect_values(ud, {1, 1, 2, 3});
  expect_values(invd, {0, 0, 1});
  expect_values(cd, {2, 1});
}

TEST(Searchsorted, PyTorchsExamples) {
  Tensor seq = tensor({1, 3, 5, 7, 9});
  Tensor vals = tensor({{3, 6, 9}, {3, 6, 9}});
  expect_values(searchsorted(seq, vals), {1, 3, 4, 1, 3, 4});
  expect_values(searchsorted(seq, vals, false, true), {2, 3, 5, 2, 3, 5});
  expect_values(searchsorted(seq, vals, false, false, std::string("right")), {2, 3, 5, 2, 3, 5});
  Tensor nd = tensor({{1, 3, 5, 7, 9}, {2, 4, 6, 8, 10}});
  expect_values(searchsorted(nd, vals), {1, 3, 4, 1, 2, 4});
  Tensor s = searchsorted(tensor({1, 2}), Scalar(1.5));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<int64_t>(), 1);
  EXPECT_EQ(searchsorted(seq, vals, /*out_int32=*/true).dtype(), kInt32);
  expect_values(searchsorted(tensor({3.0, 1.0, 2.0}), tensor({1.5, 2.5}), false, false,
                             std::nullopt, tensor({1, 2, 0}).to(kInt64)),
                {1, 2});
  expect_values(searchsorted(tensor({1.0, 2.0, kNaN}), tensor({kNaN, 3.0})), {3, 3});
  expect_values(bucketize(vals, seq), {1, 3, 4, 1, 3, 4});
  expect_values(bucketize(vals, seq, false, true), {2, 3, 5, 2, 3, 5});
}

TEST(Searchsorted, Errors) {
  expect_error(
      [] {
        searchsorted(tensor({{1, 2}, {3, 4}}), tensor({1, 2}));
      },
      "searchsorted: boundaries tensor should be 1 dimension or the first N-1 "
      "dimensions");
  expect_error(
      [] {
        searchsorted(tensor({1, 2}), tensor({1}), false, false, std::string("mid"));
      },
      "side can only be 'left' or 'right' but got mid");
  expect_error(
      [] {
        searchsorted(tensor({1, 2}), tensor({1}), false, true, std::string("left"));
      },
      "side and right can't be set to opposites");
  expect_error(
      [] {
        bucketize(tensor({1, 2}), tensor({{1, 2}}));
      },
      "boundaries tensor must be 1 dimension, but got dim(2)");
  expect_error(
      [] {
        searchsorted(tensor({1, 2}), tensor({1}), false, false, std::nullopt,
                     tensor({0, 1}).to(kInt32));
      },
      "sorter must be a tensor of long dtype");
}

TEST(Histc, PyTorchsExamplesAndRanges) {
  expect_values(histc(tensor({1.0, 2.0, 1.0}), 4, 0, 3), {0, 2, 1, 0});
  expect_values(histc(tensor({1.0, 2.0, 1.0, 5.0}), 4), {2, 1, 0, 1});
  expect_values(histc(tensor({1.0, 2.0, 3.0}), 4, 2, 2), {1, 0, 1, 1});
  expect_values(histc(tensor({0.0, 0.5, 1.0, 1.5, 2.0}), 4, 0, 2), {1, 1, 1, 2});
  expect_values(histc(empty({0}), 4), {0, 0, 0, 0});
  EXPECT_EQ(histc(tensor({1.0f, 2.0f}), 2).dtype(), kFloat32);
  expect_error([] { histc(tensor({1.0, 2.0}), -1); }, "histc: bins must be > 0, got -1");
  expect_error(
      [] {
        histc(tensor({1.0, 2.0}), 4, 3, 1);
      },
      "histc: max (1) must be larger than or equal to min (3)");
  expect_error([] { histc(tensor({1, 2}), 4); }, "histc");
}

TEST(Bincount, CountsWeightsAndErrors) {
  expect_values(bincount(tensor({4, 3, 6, 3, 4})), {0, 0, 0, 2, 2, 0, 1});
  Tensor w =
      bincount(tensor({0, 1, 1, 2}), tensor({0.5, 1.0, 1.5, 2.0}, TensorOptions(kFloat64)), 5);
  EXPECT_EQ(w.dtype(), kFloat64);
  expect_values(w, {0.5, 2.5, 2.0, 0, 0});
  EXPECT_EQ(bincount(tensor({0, 1}), tensor({1.0f, 2.0f})).dtype(), kFloat32);
  EXPECT_EQ(bincount(tensor({0, 1}), tensor({1, 2})).dtype(), kFloat64);
  expect_values(bincount(empty({0}, TensorOptions(kInt64)), std::nullopt, 3), {0, 0, 0});
  expect_error(
      [] {
        bincount(tensor({-1, 2}));
      },
      "bincount: only supports 1-d non-negative integral inputs");
  expect_error(
      [] {
        bincount(tensor({1.0, 2.0}));
      },
      "bincount: only supports 1-d non-negative integral inputs");
  expect_error(
      [] {
        bincount(tensor({1, 2}), tensor({1.0}));
      },
      "bincount: weights should be 1-d and have the same length as input");
  expect_error(
      [] {
        bincount(tensor({1, 2}), std::nullopt, -1);
      },
      "bincount: minlength should be >= 0");
}

TEST(SortErrors, PyTorchsMessages) {
  expect_error([] { tensor({1.0, 2.0}).topk(3); }, "topk: k (3) is out of range [0, 2]");
  expect_error(
      [] {
        zeros({3, 4}).kthvalue(5);
      },
      "kthvalue: k (5) is out of range [1, 4] for dimension 1");
  expect_error(
      [] {
        zeros({3, 0}).median(1);
      },
      "median_dim: Expected reduction dim 1 to have non-zero size.");
  expect_error(
      [] {
        zeros({3, 0}).mode(1);
      },
      "mode: Expected reduction dim 1 to have non-zero size.");
  expect_error([] { zeros({3, 4}).sort(2); }, "dimension out of range");
}

TEST(SortGrad, GradientsFlowBackThroughTheSelectedPositions) {
  Tensor x = tensor({3.0, 1.0, 2.0, 5.0}).requires_grad_();
  auto [v, i] = x.topk(2);
  (v * tensor({10.0, 1.0})).sum().backward();
  expect_values(x.grad(), {1, 0, 0, 10});
  Tensor y = tensor({1.0, 3.0, 2.0, 5.0}).requires_grad_();
  std::get<0>(y.cummax(0)).sum().backward();
  expect_values(y.grad(), {1, 2, 0, 1});
  Tensor z = tensor({{4.0, 1.0, 3.0}, {2.0, 6.0, 5.0}}).requires_grad_();
  std::get<0>(z.sort(1)).select(1, 0).sum().backward();
  expect_values(z.grad(), {0, 1, 0, 1, 0, 0});
  Tensor m = tensor({2.0, 1.0, 2.0}).requires_grad_();
  m.median().backward();
  expect_values(m.grad(), {0.5, 0, 0.5});
}

}  // namespace
}  // namespace kiln
