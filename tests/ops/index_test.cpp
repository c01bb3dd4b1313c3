// Gather/scatter and index ops beyond the op table: PyTorch's documented examples, gradients
// with ties and zeros, out-of-range errors that leave tensors untouched, and the row path
// (Note [Row path] in kiln/backend/cpu/scatter.h) against plain loops.
#include <gtest/gtest.h>

#include <random>

#include "kiln/kiln.h"

namespace kiln {
namespace {

std::vector<double> values(const Tensor& t) {
  Tensor c = t.detach().to(kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

template <class F>
void expect_error(F f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected a kiln::Error";
  } catch (const Error& e) {
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

Tensor ix(std::initializer_list<int64_t> v) { return tensor(v, kInt64); }

TEST(ScatterReduce, PyTorchDocumentedExamples) {
  Tensor input = tensor({1., 2., 3., 4.}), index = ix({0, 1, 0, 1, 2, 1});
  Tensor src = tensor({1., 2., 3., 4., 5., 6.});
  EXPECT_EQ(values(input.scatter_reduce(0, index, src, "sum")), (std::vector<double>{5, 14, 8, 4}));
  EXPECT_EQ(values(input.scatter_reduce(0, index, src, "sum", false)),
            (std::vector<double>{4, 12, 5, 4}));
  Tensor input2 = tensor({5., 4., 3., 2.});
  EXPECT_EQ(values(input2.scatter_reduce(0, index, src, "amax")),
            (std::vector<double>{5, 6, 5, 2}));
  EXPECT_EQ(values(input2.scatter_reduce(0, index, src, "amax", false)),
            (std::vector<double>{3, 6, 5, 2}));
}

TEST(ScatterReduce, IntegerMeanRoundsDown) {
  Tensor r = arange(4).scatter_reduce(0, ix({1, 1}), ix({-2, -3}), "mean", false);
  EXPECT_EQ(values(r), (std::vector<double>{0, -3, 2, 3}));
}

TEST(ScatterReduce, AmaxGradientSplitsTies) {
  Tensor s = tensor({1., 2.}).requires_grad_(true), src = tensor({3., 3., 0.}).requires_grad_(true);
  Tensor r = s.scatter_reduce(0, ix({0, 0, 1}), src, "amax");
  r.sum().backward();
  EXPECT_EQ(values(r), (std::vector<double>{3, 2}));
  EXPECT_EQ(values(s.grad()), (std::vector<double>{0, 1}));
  EXPECT_EQ(values(src.grad()), (std::vector<double>{0.5, 0.5, 0}));
}

TEST(ScatterReduce, ProdGradientWithZeros) {
  Tensor s = tensor({2., 0., 3.}).requires_grad_(true);
  Tensor src = tensor({4., 0., 5., 6.}).requires_grad_(true);
  Tensor r = s.scatter_reduce(0, ix({0, 1, 1, 2}), src, "prod");
  (r * tensor({1., 2., 3.})).sum().backward();
  EXPECT_EQ(values(r), (std::vector<double>{8, 0, 18}));
  EXPECT_EQ(values(s.grad()), (std::vector<double>{4, 0, 18}));
  EXPECT_EQ(values(src.grad()), (std::vector<double>{2, 0, 0, 9}));
}

TEST(ScatterReduce, MeanGradientWithoutSelf) {
  Tensor s = tensor({2., 1., 3.}).requires_grad_(true);
  Tensor src = tensor({4., 1., 5., 6.}).requires_grad_(true);
  Tensor r = s.scatter_reduce(0, ix({0, 0, 1, 0}), src, "mean", false);
  r.sum().backward();
  std::vector<double> rv = values(r), sg = values(s.grad()), gg = values(src.grad());
  EXPECT_NEAR(rv[0], 11.0 / 3, 1e-6);
  EXPECT_EQ(sg, (std::vector<double>{0, 0, 1}));
  EXPECT_NEAR(gg[0], 1.0 / 3, 1e-6);
  EXPECT_EQ(gg[2], 1);
}

TEST(Scatter, DocumentedExamples) {
  Tensor t = tensor({{1., 2.}, {3., 4.}});
  EXPECT_EQ(values(t.gather(1, tensor({{0, 0}, {1, 0}}).to(kInt64))),
            (std::vector<double>{1, 1, 4, 3}));
  Tensor idx = ix({2, 3}).view({2, 1});
  Tensor mul = full({2, 4}, 2.).scatter_(1, idx, 1.25, "multiply");
  EXPECT_EQ(values(mul), (std::vector<double>{2, 2, 2.5, 2, 2, 2, 2, 2.5}));
  Tensor add = full({2, 4}, 2.).scatter(1, idx, 1.25, "add");
  EXPECT_EQ(values(add), (std::vector<double>{2, 2, 3.25, 2, 2, 2, 2, 3.25}));
  Tensor src = arange(1, 11).view({2, 5}).to(kFloat64);
  Tensor r = zeros({3, 5}, kFloat64).scatter_(0, tensor({{0, 1, 2, 0}}).to(kInt64), src);
  EXPECT_EQ(values(r), (std::vector<double>{1, 0, 0, 4, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0}));
}

TEST(Scatter, OutOfRangeRaisesAndWritesNothing) {
  Tensor x = zeros({4});
  expect_error([&] { x.scatter_(0, ix({1, 7}), ones({2})); }, {"scatter", "7", "size 4"});
  expect_error([&] { x.scatter_add_(0, ix({1, -1}), ones({2})); }, {"scatter_add", "-1"});
  expect_error([&] { x.index_add_(0, ix({0, 4}), ones({2})); }, {"index_add", "4"});
  expect_error([&] { x.index_copy_(0, ix({-1}), ones({1})); }, {"index_copy", "-1"});
  expect_error([&] { x.put_(ix({0, 4}), ones({2})); }, {"put_", "4"});
  expect_error([&] { x.index_put_({ix({2, 9})}, ones({2})); }, {"index_put_", "9"});
  expect_error([&] { x.gather(0, ix({-1})); }, {"gather", "-1", "0 <= index < 4"});
  expect_error([&] { x.index_select(0, ix({4})); }, {"index_select", "4"});
  expect_error([&] { x.take(ix({-5})); }, {"take", "-5"});
  EXPECT_EQ(values(x), (std::vector<double>{0, 0, 0, 0}));
}

TEST(Scatter, NegativeIndicesWhereAllowed) {
  Tensor x = arange(4).to(kFloat64);
  EXPECT_EQ(values(x.take(ix({-1, 0}))), (std::vector<double>{3, 0}));
  EXPECT_EQ(values(x.index_fill(0, ix({-1}), 7)), (std::vector<double>{0, 1, 2, 7}));
  EXPECT_EQ(values(x.index({ix({-1})})), (std::vector<double>{3}));
  EXPECT_EQ(values(x.put(ix({-1}), tensor({9.}, kFloat64))), (std::vector<double>{0, 1, 2, 9}));
}

// The row path (expanded or contiguous row-wise index) against a plain loop.
TEST(Scatter, RowPathMatchesLoops) {
  const int64_t E = 5000, F = 33, N = 300;
  std::mt19937 rng(7);
  std::vector<int64_t> dst(E);
  for (auto& d : dst) d = static_cast<int64_t>(rng() % N);
  Tensor idx1d = tensor(dst, kInt64);
  Tensor src = randn({E, F}, kFloat64), self = randn({N, F}, kFloat64);
  const double* s = src.data_ptr<double>();
  for (const char* reduce : {"sum", "mean", "amax", "amin", "prod"}) {
    for (bool include_self : {true, false}) {
      std::vector<double> expect = values(self);
      std::vector<std::vector<double>> lists(N * F);
      for (int64_t e = 0; e < E; ++e)
        for (int64_t f = 0; f < F; ++f) lists[dst[e] * F + f].push_back(s[e * F + f]);
      for (int64_t p = 0; p < N * F; ++p) {
        if (lists[p].empty()) continue;
        std::vector<double> v = lists[p];
        if (include_self) v.insert(v.begin(), expect[p]);
        double r = std::string(reduce) == "prod" ? 1 : 0;
        if (std::string(reduce) == "amax") r = -INFINITY;
        if (std::string(reduce) == "amin") r = INFINITY;
        for (double x : v) {
          if (std::string(reduce) == "sum" || std::string(reduce) == "mean") r += x;
          if (std::string(reduce) == "prod") r *= x;
          if (std::string(reduce) == "amax") r = std::max(r, x);
          if (std::string(reduce) == "amin") r = std::min(r, x);
        }
        if (std::string(reduce) == "mean") r /= static_cast<double>(v.size());
        expect[p] = r;
      }
      Tensor expanded = idx1d.unsqueeze(1).expand({E, F});
      for (const Tensor& index : {expanded, expanded.contiguous()}) {
        std::vector<double> got = values(self.scatter_reduce(0, index, src, reduce, include_self));
        ASSERT_EQ(got.size(), expect.size());
        for (size_t p = 0; p < got.size(); ++p)
          ASSERT_NEAR(got[p], expect[p], 1e-9 * (1 + std::abs(expect[p])))
              << reduce << " include_self " << include_self << " at " << p;
      }
    }
  }
  // gather / index_select / index_add take rows the same way.
  Tensor g = self.gather(0, idx1d.unsqueeze(1).expand({E, F}));
  Tensor sel = self.index_select(0, idx1d);
  std::vector<double> gv = values(g), sv = values(sel), selfv = values(self);
  for (int64_t e = 0; e < E; e += 97)
    for (int64_t f = 0; f < F; ++f) {
      ASSERT_EQ(gv[e * F + f], selfv[dst[e] * F + f]);
      ASSERT_EQ(sv[e * F + f], selfv[dst[e] * F + f]);
    }
  Tensor added = self.index_add(0, idx1d, src, 2);
  Tensor expect_add = self.scatter_add(0, idx1d.unsqueeze(1).expand({E, F}), src * 2);
  EXPECT_LT((added - expect_add).abs().max().item<double>(), 1e-9);
}

TEST(IndexOps, SelectAddCopyFill) {
  Tensor x = arange(6).view({2, 3}).to(kFloat64);
  EXPECT_EQ(values(x.index_add(1, ix({2, 0, 2}), ones({2, 3}, kFloat64), 2)),
            (std::vector<double>{2, 1, 6, 5, 4, 9}));
  EXPECT_EQ(values(x.index_select(1, ix({2, 0}))), (std::vector<double>{2, 0, 5, 3}));
  EXPECT_EQ(values(x.index_copy(0, ix({1}), tensor({{7., 8., 9.}}, kFloat64))),
            (std::vector<double>{0, 1, 2, 7, 8, 9}));
  EXPECT_EQ(values(zeros({3}, kFloat64).index_fill(0, ix({1}), tensor(4.))),
            (std::vector<double>{0, 4, 0}));
  Tensor y = x.clone();
  y.index_fill_(1, ix({0}), -1);
  EXPECT_EQ(values(y), (std::vector<double>{-1, 1, 2, -1, 4, 5}));
}

TEST(IndexOps, MaskedNonzeroWhereOneHot) {
  Tensor x = arange(6).view({2, 3}).to(kFloat64);
  Tensor mask = tensor({true, false, true});
  EXPECT_EQ(values(x.masked_select(mask)), (std::vector<double>{0, 2, 3, 5}));
  EXPECT_EQ(values(x.masked_scatter(mask, tensor({10., 11., 12., 13., 14.}, kFloat64))),
            (std::vector<double>{10, 1, 11, 12, 4, 13}));
  expect_error([&] { x.masked_scatter(mask, tensor({1.}, kFloat64)); },
               {"masked_scatter", "source"});
  Tensor nz = tensor({{0., 1.}, {2., 0.}}).nonzero();
  EXPECT_EQ(nz.sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values(nz), (std::vector<double>{0, 1, 1, 0}));
  std::vector<Tensor> t = nonzero(tensor({{0., 1.}, {2., 0.}}), /*as_tuple=*/true);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(values(t[0]), (std::vector<double>{0, 1}));
  EXPECT_EQ(values(t[1]), (std::vector<double>{1, 0}));
  std::vector<Tensor> w = where(tensor({0., 3., 0., 4.}) > 0);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(values(w[0]), (std::vector<double>{1, 3}));
  Tensor oh = one_hot(ix({2, 0, 1}));
  EXPECT_EQ(oh.dtype(), kInt64);
  EXPECT_EQ(values(oh), (std::vector<double>{0, 0, 1, 1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(one_hot(ix({1}), 4).sizes().vec(), (std::vector<int64_t>{1, 4}));
  expect_error([&] { one_hot(ix({3, 1}), 2); }, {"one_hot", "smaller than num_classes"});
  expect_error([&] { one_hot(ix({-1})); }, {"one_hot", "non-negative"});
}

TEST(IndexOps, TakeAlongDimAndPut) {
  Tensor x = arange(6).view({2, 3}).to(kFloat64);
  EXPECT_EQ(values(x.take_along_dim(tensor({{2, 0}, {1, 1}}).to(kInt64), 1)),
            (std::vector<double>{2, 0, 4, 4}));
  EXPECT_EQ(values(x.take_along_dim(ix({5, 0}))), (std::vector<double>{5, 0}));
  Tensor y = zeros({5}, kFloat64);
  y.put_(ix({1, 3, 1, 1}), tensor({1., 2., 3., 4.}, kFloat64), /*accumulate=*/true);
  EXPECT_EQ(values(y), (std::vector<double>{0, 8, 0, 2, 0}));
}

}  // namespace
}  // namespace kiln
