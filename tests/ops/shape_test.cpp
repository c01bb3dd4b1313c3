// Views and shape ops beyond the op table: PyTorch's error messages, indexing semantics,
// chunk/split sizes, pad and repeat_interleave values, storage sharing of views, gradients.
#include <gtest/gtest.h>

#include <numeric>

#include "kiln/kiln.h"

namespace kiln {
namespace {

using namespace kiln::indexing;

// 0, 1, ..., n-1 in float64, viewed as `sizes`.
Tensor seq(std::vector<int64_t> sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v(n);
  std::iota(v.begin(), v.end(), 0.0);
  return tensor(v, kFloat64).view(sizes);
}

std::vector<double> values(const Tensor& t) {
  Tensor c = t.detach().to(kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

std::vector<int64_t> sizes_of(const std::vector<Tensor>& parts, int64_t dim) {
  std::vector<int64_t> s;
  for (const auto& p : parts) s.push_back(p.size(dim));
  return s;
}

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_ERROR(stmt, text)                                   \
  EXPECT_NE(error_of([&] { stmt; }).find(text), std::string::npos) \
      << "error was: " << error_of([&] { stmt; })

bool shares_storage(const Tensor& a, const Tensor& b) {
  return a.impl()->storage() == b.impl()->storage();
}

TEST(ShapeErrors, CatMessages) {
  EXPECT_ERROR(cat({zeros({2, 3}), zeros({2, 4})}, 0),
               "cat: Sizes of tensors must match except in dimension 0. Expected size 3 but got "
               "size 4 for tensor number 1 in the list.");
  EXPECT_ERROR(cat({zeros({3, 2}), zeros({3, 2}), zeros({4, 5})}, 1),
               "Sizes of tensors must match except in dimension 1. Expected size 3 but got size 4 "
               "for tensor number 2 in the list.");
  EXPECT_ERROR(cat({zeros({2, 3}), zeros({2, 3, 1})}),
               "Tensors must have same number of dimensions: got 2 and 3");
  EXPECT_ERROR(cat({}), "cat: expected a non-empty list of Tensors");
  EXPECT_ERROR(cat({zeros({})}), "zero-dimensional tensor (at position 0) cannot be concatenated");
  EXPECT_ERROR(cat({zeros({2, 3})}, 2),
               "dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_ERROR(stack({zeros({2, 3}), zeros({2, 4})}),
               "stack: expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 4] "
               "at entry 1");
}

TEST(ShapeErrors, DimOutOfRange) {
  Tensor x = zeros({2, 3});
  EXPECT_ERROR(x.transpose(0, 2),
               "dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_ERROR(x.select(-3, 0), "but got -3)");
  EXPECT_ERROR(x.squeeze(2),
               "squeeze: dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_ERROR(x.unsqueeze(3),
               "unsqueeze: dimension out of range (expected to be in range of [-3, 2], but got 3)");
  EXPECT_ERROR(x.unsqueeze(-4), "but got -4)");
  EXPECT_NO_THROW(x.unsqueeze(-3));
  EXPECT_ERROR(x.flip({0, 0}), "dim 0 appears multiple times in the list of dims");
  EXPECT_ERROR(x.permute({0}), "number of dims don't match in permute");
  EXPECT_ERROR(x.select(1, 3),
               "select: index 3 out of range for tensor of size [2, 3] at dimension 1");
  EXPECT_ERROR(x.narrow(1, 2, 2), "start (2) + length (2) exceeds dimension size (3).");
  EXPECT_ERROR(x.diagonal(0, 1, -1), "diagonal: dimensions cannot be identical 1, -1");
  EXPECT_ERROR(x.unfold(1, 4, 1), "maximum size for tensor at dimension 1 is 3 but size is 4");
  EXPECT_ERROR(x.flatten(1, 0), "start_dim cannot come after end_dim");
  EXPECT_ERROR(zeros({3}).tril(), "tril: input tensor must have at least 2 dimensions");
}

TEST(ShapeErrors, ViewOnIncompatibleStridesSaysReshape) {
  Tensor x = seq({3, 4});
  Tensor xt = x.t();
  EXPECT_ERROR(xt.view({12}), "Use .reshape(...) instead.");
  EXPECT_ERROR(x.view({5, -1}), "shape '[5, -1]' is invalid for input of size 12");
  Tensor r = xt.reshape({12});  // copies
  EXPECT_FALSE(shares_storage(r, x));
  EXPECT_EQ(values(r), values(xt));
  EXPECT_TRUE(shares_storage(x.reshape({2, 6}), x));  // contiguous: a view
}

TEST(ShapeErrors, SplitPadRepeatMessages) {
  Tensor x = zeros({5, 2});
  EXPECT_ERROR(x.split_with_sizes({2, 2}),
               "split_with_sizes: expects split_sizes to sum exactly to 5");
  EXPECT_ERROR(x.chunk(0), "chunk: expects `chunks` to be greater than 0, got: 0");
  EXPECT_ERROR(pad(zeros({1, 3}), {3, 3}, "reflect"),
               "Padding size should be less than the corresponding input dimension, but got: "
               "padding (3, 3) at dimension 1 of input [1, 3]");
  EXPECT_ERROR(pad(x, {1}), "Padding length must be divisible by 2");
  EXPECT_ERROR(pad(x, {1, 1}, "circular"), "unsupported padding mode 'circular'");
  EXPECT_ERROR(pad(x, {1, 1}, "reflect", 1.0), "doesn't take in value argument");
  EXPECT_ERROR(x.repeat({2}), "Number of dimensions of repeat dims (1) can not be smaller");
  EXPECT_ERROR(x.repeat_interleave(-1), "repeats can not be negative");
  EXPECT_ERROR(x.roll({1, 2}, {0}), "shifts and dimensions must align");
  EXPECT_ERROR(x.movedim({0, 1}, {0, 0}), "movedim: repeated dim in `destination`");
  EXPECT_ERROR(x.expand({3, 2}),
               "the expanded size of the tensor (3) must match the existing size (5)");
}

TEST(Indexing, BasicIndicesGiveViews) {
  Tensor x = seq({3, 4});
  Tensor a = x.index({Slice(0, 2), 1});
  EXPECT_EQ(a.sizes().vec(), (std::vector<int64_t>{2}));
  EXPECT_EQ(values(a), (std::vector<double>{1, 5}));
  EXPECT_TRUE(shares_storage(a, x));

  EXPECT_EQ(x.index({None, Ellipsis, Slice()}).sizes().vec(), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_EQ(x.index({"...", None}).sizes().vec(), (std::vector<int64_t>{3, 4, 1}));
  EXPECT_EQ(values(x.index({Ellipsis, -1})), (std::vector<double>{3, 7, 11}));
  EXPECT_EQ(values(x.index({Slice(None, None, 2), 0})), (std::vector<double>{0, 8}));
  EXPECT_EQ(values(x.index({Slice(-2, None), Slice(1, None, 2)})),
            (std::vector<double>{5, 7, 9, 11}));
  EXPECT_EQ(x.index({Slice(1, 100)}).size(0), 2);  // clamped like Python
  EXPECT_EQ(x.index({Slice(-100, 1)}).size(0), 1);
  EXPECT_EQ(x.index({Slice(2, 1)}).size(0), 0);
  EXPECT_EQ(values(x[1]), (std::vector<double>{4, 5, 6, 7}));
  EXPECT_EQ(values(x[-1]), (std::vector<double>{8, 9, 10, 11}));
  EXPECT_EQ(x[1][2].item<double>(), 6);
  EXPECT_EQ(x.index({1, 2}).dim(), 0);
  EXPECT_EQ(x.index({true}).sizes().vec(), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_EQ(x.index({Slice(), false}).sizes().vec(), (std::vector<int64_t>{3, 0, 4}));
  EXPECT_EQ(x.index({}).sizes().vec(), (std::vector<int64_t>{3, 4}));
}

TEST(Indexing, Errors) {
  Tensor x = seq({3, 4});
  EXPECT_ERROR(x.index({Slice(None, None, -1)}), "step must be greater than zero");
  EXPECT_ERROR(x.index({Slice(0, 2, 0)}), "slice step cannot be zero");
  EXPECT_ERROR(x.index({3}), "index 3 is out of bounds for dimension 0 with size 3");
  EXPECT_ERROR(x[-4], "index -4 is out of bounds for dimension 0 with size 3");
  EXPECT_ERROR(x.index({0, 0, 0}), "too many indices for tensor of dimension 2");
  EXPECT_ERROR(x.index({Ellipsis, 0, Ellipsis}), "an index can only have a single ellipsis");
  EXPECT_ERROR(x.index({tensor({0, 3})}), "index 3 is out of bounds for dimension 0 with size 3");
  EXPECT_ERROR(TensorIndex("..x"), "expected \"...\"");
}

TEST(Indexing, IndexPutWritesThroughTheView) {
  Tensor x = zeros({3, 4}, kFloat64);
  x.index_put_({Slice(), 0}, 7.0);
  x.index_put_({1}, tensor({1.0, 2.0, 3.0, 4.0}, kFloat64));
  x.index_put_({2, Slice(1, None, 2)}, tensor({{5.0, 6.0}}, kFloat64));  // leading 1 dropped
  EXPECT_EQ(values(x), (std::vector<double>{7, 0, 0, 0, 1, 2, 3, 4, 7, 5, 0, 6}));
  Tensor leaf = zeros({2}, kFloat64).requires_grad_();
  EXPECT_ERROR(leaf.index_put_({0}, 1.0), "a leaf Variable that requires grad");
  {
    NoGradGuard no_grad;
    leaf.index_put_({0}, 1.0);
  }
  EXPECT_EQ(values(leaf), (std::vector<double>{1, 0}));
}

TEST(Views, ShareStorageWithTheirBase) {
  Tensor x = seq({4, 6});
  std::vector<Tensor> views = {x.view({6, 4}),
                               x.t(),
                               x.slice(1, 1, 5, 2),
                               x.select(0, 2),
                               x.narrow(0, 1, 2),
                               x.diagonal(1),
                               x.unfold(1, 3, 2),
                               x.unsqueeze(0).squeeze(),
                               x.expand({2, 4, 6}),
                               x.as_strided({2, 2}, {6, 1}, 3),
                               x.movedim(0, 1),
                               x.chunk(2, 1)[1],
                               x.unbind(0)[3],
                               x.split(3, 0)[1],
                               x.flatten(),
                               x.unflatten(1, {2, 3}),
                               x.mT(),
                               x.index({Slice(1, 3), None, 2})};
  for (size_t i = 0; i < views.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(shares_storage(views[i], x));
  }
  // Writing through a view changes the base.
  x.select(0, 2).fill_(-1.0);
  EXPECT_EQ(values(x[2]), std::vector<double>(6, -1.0));
  x.diagonal().fill_(9.0);
  EXPECT_EQ(x.index({1, 1}).item<double>(), 9);
  EXPECT_EQ(x.index({3, 3}).item<double>(), 9);
  x.t().index_put_({5, 0}, 42.0);
  EXPECT_EQ(x.index({0, 5}).item<double>(), 42);
  // Strides of views are those of PyTorch.
  EXPECT_EQ(x.t().strides().vec(), (std::vector<int64_t>{1, 6}));
  EXPECT_EQ(x.slice(1, 1, 5, 2).strides().vec(), (std::vector<int64_t>{6, 2}));
  EXPECT_EQ(x.slice(1, 1, 5, 2).storage_offset(), 1);
  EXPECT_EQ(x.diagonal(1).strides().vec(), (std::vector<int64_t>{7}));
  EXPECT_EQ(x.unfold(1, 3, 2).strides().vec(), (std::vector<int64_t>{6, 2, 1}));
  EXPECT_EQ(x.unsqueeze(1).strides().vec(), (std::vector<int64_t>{6, 6, 1}));
  EXPECT_EQ(x.expand({2, 4, 6}).strides().vec(), (std::vector<int64_t>{0, 6, 1}));
}

TEST(Splitting, SizesMatchPyTorch) {
  Tensor five = seq({5});
  EXPECT_EQ(sizes_of(five.chunk(3), 0), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(sizes_of(seq({6}).chunk(4), 0), (std::vector<int64_t>{2, 2, 2}));  // fewer chunks
  EXPECT_EQ(sizes_of(seq({0}).chunk(3), 0), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(sizes_of(five.split(2), 0), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(sizes_of(five.split(5), 0), (std::vector<int64_t>{5}));
  EXPECT_EQ(sizes_of(five.split(7), 0), (std::vector<int64_t>{5}));
  EXPECT_EQ(sizes_of(seq({0}).split(2), 0), (std::vector<int64_t>{0}));
  EXPECT_EQ(sizes_of(five.split({1, 4}), 0), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(sizes_of(seq({2, 7}).split_with_sizes({3, 0, 4}, 1), 1),
            (std::vector<int64_t>{3, 0, 4}));
  EXPECT_EQ(values(five.chunk(3)[2]), (std::vector<double>{4}));
  auto rows = seq({3, 2}).unbind(1);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(values(rows[1]), (std::vector<double>{1, 3, 5}));
}

TEST(CopyOps, PadValues) {
  Tensor x = seq({4});  // 0 1 2 3
  EXPECT_EQ(values(pad(x, {2, 1}, "reflect")), (std::vector<double>{2, 1, 0, 1, 2, 3, 2}));
  EXPECT_EQ(values(pad(x, {2, 1}, "replicate")), (std::vector<double>{0, 0, 0, 1, 2, 3, 3}));
  EXPECT_EQ(values(pad(x, {1, 2}, "constant", 9.0)), (std::vector<double>{9, 0, 1, 2, 3, 9, 9}));
  EXPECT_EQ(values(pad(x, {-1, -2})), (std::vector<double>{1}));
  Tensor m = seq({2, 3});  // [[0 1 2] [3 4 5]]
  Tensor r = pad(m, {1, 1, 1, 0}, "reflect");
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(values(r), (std::vector<double>{4, 3, 4, 5, 4, 1, 0, 1, 2, 1, 4, 3, 4, 5, 4}));
}

TEST(CopyOps, RepeatInterleaveRepeatTileFlipRollTril) {
  Tensor v = tensor({1.0, 2.0, 3.0}, kFloat64);
  EXPECT_EQ(values(v.repeat_interleave(2)), (std::vector<double>{1, 1, 2, 2, 3, 3}));
  Tensor m = seq({2, 2});
  EXPECT_EQ(values(m.repeat_interleave(2, 1)), (std::vector<double>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(values(m.repeat_interleave(2, 0)), (std::vector<double>{0, 1, 0, 1, 2, 3, 2, 3}));
  EXPECT_EQ(m.repeat_interleave(3).sizes().vec(), (std::vector<int64_t>{12}));
  EXPECT_EQ(values(v.repeat({2})), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(v.repeat({2, 1, 2}).sizes().vec(), (std::vector<int64_t>{2, 1, 6}));
  EXPECT_EQ(m.tile({2}).sizes().vec(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(values(m.flip({0})), (std::vector<double>{2, 3, 0, 1}));
  EXPECT_EQ(values(m.flip({0, 1})), (std::vector<double>{3, 2, 1, 0}));
  EXPECT_EQ(values(m.roll(1)), (std::vector<double>{3, 0, 1, 2}));  // flattened
  EXPECT_EQ(values(m.roll(1, 1)), (std::vector<double>{1, 0, 3, 2}));
  EXPECT_EQ(values(seq({3, 3}).tril()), (std::vector<double>{0, 0, 0, 3, 4, 0, 6, 7, 8}));
  EXPECT_EQ(values(seq({3, 3}).triu(1)), (std::vector<double>{0, 1, 2, 0, 0, 5, 0, 0, 0}));
  Tensor ints = tensor({1, 2, 3});
  EXPECT_EQ(ints.flip({0}).dtype(), kInt64);
  EXPECT_EQ(values(ints.flip({0})), (std::vector<double>{3, 2, 1}));
}

TEST(CopyOps, CatPromotesAndCopiesLargeInputs) {
  EXPECT_EQ(cat({zeros({2}, kFloat32), zeros({3}, kInt64)}).dtype(), kFloat32);
  EXPECT_EQ(cat({zeros({2}, kInt32), zeros({3}, kInt64)}).dtype(), kInt64);
  EXPECT_EQ(cat({zeros({2}, kFloat32), zeros({3}, kFloat64)}).dtype(), kFloat64);
  EXPECT_EQ(cat({zeros({0}), zeros({2, 3})}, 1).sizes().vec(), (std::vector<int64_t>{2, 3}));
  // Big enough for the parallel paths: along dim 0 (one block per input) and dim 1 (rows).
  Tensor a = seq({300, 700}), b = seq({200, 700}) + 1e6;
  Tensor c0 = cat({a, b});
  EXPECT_EQ(c0.sizes().vec(), (std::vector<int64_t>{500, 700}));
  EXPECT_EQ(c0.index({299, 699}).item<double>(), 299 * 700 + 699);
  EXPECT_EQ(c0.index({300, 0}).item<double>(), 1e6);
  Tensor c1 = cat({a, a.t().t(), a.to(kFloat32)}, 1);
  EXPECT_EQ(c1.sizes().vec(), (std::vector<int64_t>{300, 2100}));
  EXPECT_EQ(c1.index({150, 700 + 3}).item<double>(), 150 * 700 + 3);
  EXPECT_EQ(c1.index({299, 2099}).item<double>(), 299 * 700 + 699);
  Tensor s = stack({seq({2, 3}), seq({2, 3})}, 1);
  EXPECT_EQ(s.sizes().vec(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(values(s.select(1, 1)), values(seq({2, 3})));
}

TEST(ShapeGrad, BackwardsAreDifferentiable) {
  // d/dx sum(slice(x)^2) = 2x on the slice; its gradient (create_graph) is 2 there.
  Tensor x = seq({5}).requires_grad_();
  Tensor y = x.slice(0, 1, 4, 2);
  Tensor loss = (y * y).sum();
  auto g = autograd::grad({loss}, {x}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_EQ(values(g[0]), (std::vector<double>{0, 2, 0, 6, 0}));
  ASSERT_TRUE(g[0].requires_grad());
  auto gg = autograd::grad({g[0].sum()}, {x});
  EXPECT_EQ(values(gg[0]), (std::vector<double>{0, 2, 0, 2, 0}));
}

TEST(ShapeGrad, AsStridedAccumulatesOverlaps) {
  Tensor x = seq({5}).requires_grad_();
  Tensor windows = x.as_strided({3, 3}, {1, 1});
  windows.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 2, 3, 2, 1}));
  Tensor z = seq({6}).requires_grad_();
  z.unfold(0, 3, 1).sum().backward();
  EXPECT_EQ(values(z.grad()), (std::vector<double>{1, 2, 3, 3, 2, 1}));
  Tensor w = seq({4}).requires_grad_();
  pad(w, {2, 1}, "reflect").sum().backward();  // reads 2 1 0 1 2 3 2
  EXPECT_EQ(values(w.grad()), (std::vector<double>{1, 2, 3, 1}));
}

}  // namespace
}  // namespace kiln
