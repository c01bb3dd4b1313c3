// In-place view ops (squeeze_, unsqueeze_, t_, transpose_, as_strided_), resize_ and clip, with
// PyTorch's behaviour under autograd: a leaf that requires grad is refused, a tensor with history
// keeps a correct backward, the version counter moves, and resize_ refuses tensors that require
// grad.
#include <gtest/gtest.h>

#include <string>

#include "kiln/kiln.h"

namespace kiln {
namespace {

std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

void expect_error(const std::function<void()>& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(InplaceViews, SqueezeAndUnsqueezeChangeTheTensorItself) {
  Tensor t = arange(6, kFloat32).view({2, 1, 3});
  void* data = t.data_ptr();
  Tensor same = t;  // another handle on the same tensor sees the change
  t.squeeze_();
  EXPECT_EQ(same.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(t.data_ptr(), data);
  EXPECT_EQ(values(t), (std::vector<double>{0, 1, 2, 3, 4, 5}));

  t.unsqueeze_(1);
  EXPECT_EQ(t.sizes(), (std::vector<int64_t>{2, 1, 3}));
  t.unsqueeze_(-1);
  EXPECT_EQ(t.sizes(), (std::vector<int64_t>{2, 1, 3, 1}));
  t.squeeze_({1});
  EXPECT_EQ(t.sizes(), (std::vector<int64_t>{2, 3, 1}));
  t.squeeze_(0);  // size 2: unchanged, as in PyTorch
  EXPECT_EQ(t.sizes(), (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(values(t), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  expect_error([&] { t.unsqueeze_(5); }, "unsqueeze");
}

TEST(InplaceViews, TransposeAndTSwapSizesAndStrides) {
  Tensor m = arange(6, kFloat32).view({2, 3});
  m.t_();
  EXPECT_EQ(m.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(m.strides(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(values(m), (std::vector<double>{0, 3, 1, 4, 2, 5}));

  Tensor c = arange(24, kFloat32).view({2, 3, 4});
  c.transpose_(0, 2);
  EXPECT_EQ(c.sizes(), (std::vector<int64_t>{4, 3, 2}));
  EXPECT_EQ(c.strides(), (std::vector<int64_t>{1, 4, 12}));
  EXPECT_EQ(c[3][2][1].item<float>(), 23.0f);
  expect_error([] { zeros({2, 2, 2}).t_(); }, "t");
}

TEST(InplaceViews, AsStridedSetsTheGeometry) {
  Tensor t = arange(6, kFloat32);
  t.as_strided_({2, 2}, {1, 2}, 1);
  EXPECT_EQ(t.sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(t.storage_offset(), 1);
  EXPECT_EQ(values(t), (std::vector<double>{1, 3, 2, 4}));
}

TEST(InplaceViews, AutogradFollowsPyTorch) {
  // A leaf that requires grad cannot be changed in place while recording ...
  Tensor leaf = ones({2, 1, 3}).requires_grad_();
  expect_error([&] { leaf.squeeze_(); },
               "squeeze_: a leaf Variable that requires grad is being used in an in-place "
               "operation.");
  expect_error([&] { leaf.unsqueeze_(0); }, "unsqueeze_: a leaf Variable");
  // ... but can under no_grad (its requires_grad stays).
  {
    NoGradGuard no_grad;
    leaf.squeeze_();
  }
  EXPECT_EQ(leaf.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(leaf.requires_grad());

  // A tensor with history keeps a backward through the view: y = 2 x, y.squeeze_(), sum(y * y)
  // gives x.grad = 8 x (PyTorch: the same, shape [2, 1, 3]).
  Tensor x = arange(1, 7, kFloat32).view({2, 1, 3}).requires_grad_();
  Tensor y = x * 2;
  y.squeeze_();
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 3}));
  ASSERT_TRUE(y.grad_fn() != nullptr);
  EXPECT_NE(y.grad_fn()->name().find("Squeeze"), std::string::npos) << y.grad_fn()->name();
  (y * y).sum().backward();
  EXPECT_EQ(x.grad().sizes(), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{8, 16, 24, 32, 40, 48}));

  Tensor z = arange(6, kFloat32).view({2, 3}).requires_grad_();
  Tensor w = z * 1;
  w.t_();
  (w * arange(6, kFloat32).view({3, 2})).sum().backward();  // dz[i][j] = w-weight[j][i] = 2j + i
  EXPECT_EQ(values(z.grad()), (std::vector<double>{0, 2, 4, 1, 3, 5}));
}

TEST(InplaceViews, MoveTheVersionCounter) {
  // PyTorch: a = x * 2; b = a * a; a.squeeze_(); b.backward() fails (a was saved at version 0).
  Tensor x = ones({2, 1, 3}).requires_grad_();
  Tensor a = x * 2;
  const int64_t before = a._version();
  Tensor b = a * a;
  a.squeeze_();
  EXPECT_EQ(a._version(), before + 1);
  expect_error([&] { b.sum().backward(); }, "modified by an inplace operation");
}

TEST(Resize, ShrinksAndGrowsKeepingThePrefix) {
  Tensor t = arange(6, kFloat32).view({2, 3});
  Tensor view = t.view({6});  // shares the storage
  t.resize_({4});
  EXPECT_EQ(t.sizes(), (std::vector<int64_t>{4}));
  EXPECT_EQ(values(t), (std::vector<double>{0, 1, 2, 3}));
  t.resize_({2, 5});  // grows past the storage: reallocated, the 6 elements kept
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(values(t.flatten().narrow(0, 0, 6)), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  t.flatten()[0] = 100;  // every tensor on the storage sees the new buffer (PyTorch: the same)
  EXPECT_EQ(view[0].item<float>(), 100.0f);
  EXPECT_EQ(view[5].item<float>(), 5.0f);

  // A non-contiguous tensor takes contiguous strides over the same storage.
  Tensor nc = arange(6, kFloat32).view({2, 3}).t();
  nc.resize_({2, 2});
  EXPECT_EQ(nc.strides(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values(nc), (std::vector<double>{0, 1, 2, 3}));
  // Same shape: nothing changes (strides kept).
  Tensor same = arange(6, kFloat32).view({2, 3}).t();
  same.resize_({3, 2});
  EXPECT_EQ(same.strides(), (std::vector<int64_t>{1, 3}));

  Tensor empty_start = empty({0});
  empty_start.resize_({3});
  empty_start.fill_(2);
  EXPECT_EQ(values(empty_start), (std::vector<double>{2, 2, 2}));
}

TEST(Resize, RefusesTensorsThatRequireGrad) {
  Tensor p = ones({3}).requires_grad_();
  expect_error([&] { p.resize_({4}); }, "resize_: cannot resize variables that require grad");
  expect_error([] { zeros({2}).resize_({-1}); }, "resize_: sizes must be non-negative");
}

TEST(Clip, IsClampInEveryForm) {
  const Tensor t = tensor({-2.0, -0.5, 0.5, 2.0});
  EXPECT_EQ(values(t.clip(-1, 1)), (std::vector<double>{-1, -0.5, 0.5, 1}));
  EXPECT_EQ(values(t.clip(std::nullopt, 0)), (std::vector<double>{-2, -0.5, 0, 0}));
  EXPECT_EQ(values(t.clip(0)), (std::vector<double>{0, 0, 0.5, 2}));
  const Tensor lo = tensor({-1.0, 0.0, 0.0, 3.0}), hi = tensor({1.0, 1.0, 0.25, 4.0});
  EXPECT_EQ(values(t.clip(lo, hi)), (std::vector<double>{-1, 0, 0.25, 3}));
  EXPECT_EQ(values(clip(t, lo)), (std::vector<double>{-1, 0, 0.5, 3}));
  EXPECT_EQ(values(clip(t, -1.5, 1.5)), (std::vector<double>{-1.5, -0.5, 0.5, 1.5}));

  Tensor u = t.clone();
  u.clip_(-1, 1);
  EXPECT_EQ(values(u), (std::vector<double>{-1, -0.5, 0.5, 1}));
  Tensor v = t.clone();
  clip_(v, std::nullopt, std::optional<Tensor>(hi));
  EXPECT_EQ(values(v), (std::vector<double>{-2, -0.5, 0.25, 2}));
  Tensor w = t.clone();
  clamp_(w, 0, 1);
  EXPECT_EQ(values(w), (std::vector<double>{0, 0, 0.5, 1}));
}

}  // namespace
}  // namespace kiln
