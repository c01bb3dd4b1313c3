// Advanced indexing (x.index / x.index_put_ with index tensors and masks): where the indexed
// dims land, masks, accumulate, gradients and errors. Expected values come from PyTorch.
#include <gtest/gtest.h>

#include "kiln/kiln.h"

namespace kiln {
namespace {

using namespace kiln::indexing;

std::vector<double> values(const Tensor& t) {
  Tensor c = t.detach().to(kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}
std::vector<int64_t> shape(const Tensor& t) {
  std::vector<int64_t> s;
  for (const SymInt& d : t.sizes()) s.push_back(d.guard_int());
  return s;
}
Tensor ix(std::initializer_list<int64_t> v) { return tensor(v, kInt64); }
Tensor x24() { return arange(24).to(kFloat64).view({2, 3, 4}); }

TEST(AdvancedIndexing, AdjacentIndicesReplaceTheirDims) {
  Tensor r = x24().index({Slice(), ix({0, 2}), ix({1, 3})});
  EXPECT_EQ(shape(r), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values(r), (std::vector<double>{1, 11, 13, 23}));
}

TEST(AdvancedIndexing, SeparatedIndicesGoFirst) {
  Tensor r = x24().index({ix({0, 1}), Slice(), ix({1, 3})});
  EXPECT_EQ(shape(r), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(r), (std::vector<double>{1, 5, 9, 15, 19, 23}));
  Tensor i = ix({0, 1});
  EXPECT_EQ(shape(x24().index({None, i, Ellipsis, i})), (std::vector<int64_t>{2, 1, 3}));
}

TEST(AdvancedIndexing, IntegersSelectFirstAndNegativesWrap) {
  Tensor r = x24().index({0, Slice(), ix({3, -1})});
  EXPECT_EQ(shape(r), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values(r), (std::vector<double>{3, 3, 7, 7, 11, 11}));
}

TEST(AdvancedIndexing, BooleanMask) {
  Tensor x = x24();
  EXPECT_EQ(values(x.index({x > 20})), (std::vector<double>{21, 22, 23}));
  Tensor rows = x.index({Slice(), tensor({true, false, true})});
  EXPECT_EQ(shape(rows), (std::vector<int64_t>{2, 2, 4}));
  EXPECT_EQ(values(rows.select(1, 1)), (std::vector<double>{8, 9, 10, 11, 20, 21, 22, 23}));
  try {
    x.index({tensor({true, false, true})});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shape of the mask"), std::string::npos) << e.what();
  }
}

TEST(AdvancedIndexing, IndexPutAndAccumulate) {
  Tensor x = x24();
  x.index_put_({x > 20}, 0.0);
  EXPECT_EQ(values(x.index({1, 2})), (std::vector<double>{20, 0, 0, 0}));
  Tensor y = zeros({5}, kFloat64);
  index_put_(y, {ix({1, 3, 1, 1})}, tensor({1., 2., 3., 4.}), /*accumulate=*/true);
  EXPECT_EQ(values(y), (std::vector<double>{0, 8, 0, 2, 0}));
  Tensor z = zeros({2, 3}, kFloat64);
  z.index_put_({Slice(), ix({2, 0})}, tensor({7., 8.}));
  EXPECT_EQ(values(z), (std::vector<double>{8, 0, 7, 8, 0, 7}));
  Tensor p = index_put(zeros({2, 3}, kFloat64), {ix({1}), ix({2})}, tensor(5.));
  EXPECT_EQ(values(p), (std::vector<double>{0, 0, 0, 0, 0, 5}));
}

TEST(AdvancedIndexing, GradientAccumulatesRepeats) {
  Tensor x = zeros({4}, kFloat64).requires_grad_(true);
  Tensor r = x.index({ix({1, 1, 3})});
  (r * tensor({1., 2., 3.})).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 3, 0, 3}));
}

TEST(AdvancedIndexing, OutOfRangeWritesNothing) {
  Tensor x = zeros({2, 3}, kFloat64);
  try {
    x.index_put_({ix({0, 1}), ix({1, 3})}, 1.0);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 3 is out of bounds for dimension 1 with size 3"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(values(x), (std::vector<double>(6, 0)));
}

}  // namespace
}  // namespace kiln
