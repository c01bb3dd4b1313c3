// The Tensor surface libtorch programs rely on: int64 sizes, one-integer size lists, the var/std
// overload set, assignment through temporaries, new_* factories, memory formats, out= forms.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <type_traits>

#include "kiln/kiln.h"
#include "tests/ops/op_test_util.h"

namespace kiln {
namespace {

using testing::raises;

Tensor arange_f64(int64_t n) { return arange(n, kFloat64); }

TEST(LibtorchSurface, SizesArePlainIntegers) {
  Tensor x = zeros({4, 5});
  static_assert(std::is_same_v<decltype(x.size(0)), int64_t>);
  static_assert(std::is_same_v<decltype(x.numel()), int64_t>);
  static_assert(std::is_same_v<decltype(x.sizes()), IntArrayRef>);
  static_assert(std::is_same_v<decltype(x.stride(0)), int64_t>);
  EXPECT_EQ(std::min(int64_t{3}, x.size(1)), 3);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%ld %ld", x.size(0), x.numel());
  EXPECT_STREQ(buf, "4 20");
  IntArrayRef s = x.sizes();
  std::vector<int64_t> v = x.sizes();
  EXPECT_EQ(v, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(s.slice(1), (std::vector<int64_t>{5}));
  EXPECT_EQ(x.strides(), (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(x.t().stride(0), 1);
}

TEST(LibtorchSurface, SymbolicSizesStayReachable) {
  ShapeEnv env;
  SymInt s0 = env.create_symbol(8);
  Tensor x = empty_meta({s0, 3});
  EXPECT_EQ(x.sym_size(0).str(), "s0");
  EXPECT_EQ(x.sym_numel().str(), "3*s0");
  EXPECT_TRUE(env.guards().empty());
  EXPECT_EQ(x.size(0), 8);  // specialises, and says so
  EXPECT_FALSE(env.guards().empty());
  EXPECT_EQ(x.sizes(), (std::vector<int64_t>{8, 3}));
  EXPECT_EQ(x.numel(), 24);
}

// libtorch declares in-place methods const (`const Tensor& add_(...) const`): a Tensor is a handle,
// so init code taking `const torch::Tensor&` and range-for loops over `const auto&` call them.
TEST(LibtorchSurface, InPlaceMethodsWorkThroughConstReferences) {
  auto init = [](const Tensor& w) {
    NoGradGuard no_grad;
    w.uniform_(-1, 1);
    w.mul_(0).add_(2).clamp_(0, 1.5);
  };
  const Tensor t = zeros({3});
  init(t);
  EXPECT_TRUE(t.equal(full({3}, 1.5)));
  const std::vector<Tensor> params = {zeros({2}), ones({2, 2})};
  for (const auto& p : params) p.fill_(7).sub_(3);
  EXPECT_EQ(params[1].sum().item<float>(), 16.f);
  const Tensor r = zeros({2});
  r.resize_({4}).fill_(3);
  EXPECT_EQ(r.numel(), 4);
  EXPECT_EQ(r.sum().item<float>(), 12.f);
}

TEST(LibtorchSurface, OneIntegerIsASizeList) {
  Tensor x = arange_f64(6);
  EXPECT_EQ(zeros(3).sizes(), (std::vector<int64_t>{3}));
  EXPECT_EQ(randn(2).sizes(), (std::vector<int64_t>{2}));
  EXPECT_EQ(empty(x.size(0), kFloat64).sizes(), (std::vector<int64_t>{6}));
  EXPECT_EQ(ones(int64_t{2}, TensorOptions(kInt32)).dtype(), kInt32);
  EXPECT_EQ(x.view(-1).sizes(), (std::vector<int64_t>{6}));
  EXPECT_EQ(x.view({2, 3}).reshape(-1).sizes(), (std::vector<int64_t>{6}));
  EXPECT_EQ(ones({1}).expand(4).sizes(), (std::vector<int64_t>{4}));
  EXPECT_EQ(x.repeat(2).sizes(), (std::vector<int64_t>{12}));
  EXPECT_EQ(full(size_t{2}, 7.0).sum().item<double>(), 14.0);
}

TEST(LibtorchSurface, ArrayRefHasC10sAccessors) {
  const std::array<int64_t, 4> a{1, 2, 3, 4};
  const int64_t c[3] = {7, 8, 9};
  IntArrayRef r(a);
  EXPECT_EQ(r.slice(1, 2), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(IntArrayRef(c).back(), 9);
  EXPECT_EQ(*r.rbegin(), 4);
  EXPECT_EQ(std::vector<int64_t>(r.rbegin(), r.rend()), (std::vector<int64_t>{4, 3, 2, 1}));
  EXPECT_EQ(r.at(3), 4);
  EXPECT_THROW(r.at(4), IndexError);
  EXPECT_THROW(r.slice(3, 2), IndexError);
}

TEST(LibtorchSurface, VarAndStdPickLibtorchsOverloads) {
  Tensor x = arange_f64(24).reshape({2, 3, 4}).pow(2);
  auto var_over = [&](std::vector<int64_t> dims, double correction) {
    Tensor m = x.mean(dims, true);
    Tensor n = tensor(static_cast<double>(x.numel() / m.numel()), kFloat64);
    return ((x - m).pow(2).sum(dims) / (n - correction));
  };
  EXPECT_TRUE(x.var(1).allclose(var_over({1}, 1)));
  EXPECT_TRUE(x.var({2}).allclose(var_over({2}, 1)));
  EXPECT_TRUE(x.var({0}).allclose(var_over({0}, 1)));
  EXPECT_TRUE(x.std(-1).allclose(var_over({2}, 1).sqrt()));
  EXPECT_TRUE(x.var({1, 2}).allclose(var_over({1, 2}, 1)));
  EXPECT_TRUE(x.var({2}, false).allclose(var_over({2}, 0)));
  EXPECT_TRUE(x.var(true).allclose(var_over({0, 1, 2}, 1)));
  EXPECT_TRUE(x.var(false).allclose(var_over({0, 1, 2}, 0)));
  EXPECT_TRUE(x.var().allclose(var_over({0, 1, 2}, 1)));
  EXPECT_TRUE(var(x, 1).allclose(var_over({1}, 1)));
  EXPECT_TRUE(std::get<0>(var_mean(x, 2)).allclose(var_over({2}, 1)));
  EXPECT_EQ(x.var({1}, true, true).sizes(), (std::vector<int64_t>{2, 1, 4}));
  EXPECT_EQ(x.sum(std::nullopt, true).sizes(), (std::vector<int64_t>{1, 1, 1}));
}

TEST(LibtorchSurface, AssigningToATemporaryWritesThrough) {
  Tensor x = zeros({2, 3}, kFloat64);
  x[0] = 1.5;
  x[1] = arange_f64(3);
  x.select(1, 2) = -1;
  EXPECT_TRUE(x.equal(tensor({{1.5, 1.5, -1.0}, {0.0, 1.0, -1.0}}, kFloat64)));
  Tensor y = x;
  y = zeros({1});  // a named tensor rebinds
  EXPECT_EQ(x.numel(), 6);
  EXPECT_EQ(x[0][0].item<double>(), 1.5);
}

TEST(LibtorchSurface, NewFactoriesTakeThisTensorsOptions) {
  Tensor x = ones({2}, kFloat64);
  EXPECT_EQ(x.new_zeros({3, 2}).dtype(), kFloat64);
  EXPECT_EQ(x.new_zeros(3).sizes(), (std::vector<int64_t>{3}));
  EXPECT_EQ(x.new_ones({2}, kInt32).dtype(), kInt32);
  EXPECT_EQ(x.new_full({2, 2}, 3).sum().item<double>(), 12.0);
  EXPECT_EQ(x.new_empty({4}).dtype(), kFloat64);
  EXPECT_EQ(x.new_empty_strided({2, 2}, {1, 2}).stride(1), 2);
  Tensor src = tensor({1, 2}, kInt64);
  Tensor copy = x.new_tensor(src);
  EXPECT_EQ(copy.dtype(), kFloat64);
  src[0] = 5;
  EXPECT_EQ(copy[0].item<double>(), 1.0);
}

TEST(LibtorchSurface, DataAccessorsAndSmallMethods) {
  Tensor w = ones({3}, kFloat32).requires_grad_();
  Tensor d = w.data();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_EQ(d.data_ptr(), w.data_ptr());
  EXPECT_EQ(w.data<float>()[2], 1.0f);
  EXPECT_EQ(w.mutable_data_ptr<float>(), w.data_ptr<float>());

  Tensor p = tensor({0.0, 1.0, 0.0}, kFloat64);
  EXPECT_EQ(p.multinomial(4, true).eq(1).all().item<bool>(), true);

  Tensor x = arange_f64(5);
  EXPECT_TRUE(x[tensor({4, 0}, kInt64)].equal(tensor({4.0, 0.0}, kFloat64)));
  EXPECT_EQ(x[Scalar(2)].item<double>(), 2.0);
  EXPECT_TRUE((x % 2).equal(tensor({0.0, 1.0, 0.0, 1.0, 0.0}, kFloat64)));
  EXPECT_TRUE((7 % tensor({4, 5}, kInt64)).equal(tensor({3, 2}, kInt64)));
  Tensor m = tensor({6, 5}, kInt64);
  m &= 4;
  m |= tensor({1, 0}, kInt64);
  m ^= 1;
  EXPECT_TRUE(m.equal(tensor({4, 5}, kInt64)));
  EXPECT_TRUE(x.max(full({5}, 2.0, kFloat64)).equal(tensor({2.0, 2.0, 2.0, 3.0, 4.0}, kFloat64)));
  EXPECT_TRUE(x.min(full({5}, 2.0, kFloat64)).equal(tensor({0.0, 1.0, 2.0, 2.0, 2.0}, kFloat64)));
  EXPECT_TRUE(constant_pad_nd(ones({1}), {1, 2}, 3).equal(tensor({3.0f, 1.0f, 3.0f, 3.0f})));
}

TEST(LibtorchSurface, CloseAndLogit) {
  Tensor a = tensor({1.0, INFINITY, NAN, 2.0}, kFloat64);
  Tensor b = tensor({1.0 + 1e-9, INFINITY, NAN, 2.1}, kFloat64);
  EXPECT_TRUE(a.isclose(b).equal(tensor({true, true, false, false})));
  EXPECT_TRUE(isclose(a, b, 1e-5, 1e-8, true).equal(tensor({true, true, true, false})));
  EXPECT_TRUE(isclose(a, b, 0.1).equal(tensor({true, true, false, true})));
  EXPECT_FALSE(a.allclose(b));
  EXPECT_TRUE(a.slice(0, 0, 2).allclose(b.slice(0, 0, 2)));
  EXPECT_TRUE(
      raises([&] { isclose(a, b.to(kFloat32)); }, "isclose", "float64 did not match float32"));
  Tensor p = tensor({0.25, 0.5, 1.0}, kFloat64).requires_grad_();
  Tensor l = logit(p, 0.1);
  EXPECT_TRUE(l.allclose(tensor({std::log(1.0 / 3), 0.0, std::log(9.0)}, kFloat64)));
  l.sum().backward();  // 1 / (p (1 - p)) inside [eps, 1 - eps], 0 where clamped
  EXPECT_TRUE(p.grad().allclose(tensor({1 / 0.1875, 4.0, 0.0}, kFloat64)));
}

TEST(LibtorchSurface, DeviceAndOptions) {
  Device d(std::string("cuda:1"));
  EXPECT_EQ(d.type(), kCUDA);
  EXPECT_EQ(d.index(), 1);
  EXPECT_TRUE(d.has_index());
  EXPECT_FALSE(Device(kCPU).has_index());
  auto takes_device = [](Device dev) { return dev.str(); };
  EXPECT_EQ(takes_device(std::string("cpu")), "cpu");
  EXPECT_EQ(zeros({1}, dtype<double>()).dtype(), kFloat64);
  EXPECT_EQ(TensorOptions().dtype<int32_t>().dtype(), kInt32);
  EXPECT_EQ(TensorOptions().device(kCUDA, 1).device(), Device(kCUDA, 1));
  EXPECT_TRUE(TensorOptions().pinned_memory(true).pinned_memory());
}

TEST(LibtorchSurface, ChannelsLast) {
  Tensor x = arange_f64(2 * 3 * 4 * 5).reshape({2, 3, 4, 5}).requires_grad_();
  Tensor y = x.contiguous(MemoryFormat::ChannelsLast);
  EXPECT_EQ(y.strides(), (std::vector<int64_t>{60, 1, 15, 3}));
  EXPECT_TRUE(y.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_FALSE(y.is_contiguous());
  EXPECT_EQ(y.suggest_memory_format(), MemoryFormat::ChannelsLast);
  EXPECT_EQ(x.suggest_memory_format(), MemoryFormat::Contiguous);
  EXPECT_TRUE(y.equal(x));
  (y * y).sum().backward();
  EXPECT_TRUE(x.grad().equal(2 * x.detach()));
  EXPECT_TRUE(y.contiguous(MemoryFormat::ChannelsLast).is_same(y));
  EXPECT_TRUE(raises([&] { x.contiguous(MemoryFormat::ChannelsLast3d); }, "contiguous",
                     "needs a 5-D tensor, got one of shape [2, 3, 4, 5]"));
  EXPECT_TRUE(raises([&] { x.contiguous(MemoryFormat::Preserve); }, "contiguous",
                     "preserve memory format is unsupported"));
}

TEST(LibtorchSurface, OutForms) {
  Tensor a = arange_f64(4), b = ones({4}, kFloat64);
  Tensor out = empty({0}, kFloat64);
  add_out(out, a, b);
  EXPECT_TRUE(out.equal(a + 1));
  Tensor base = zeros({2, 4}, kFloat64);
  Tensor row = base[1];
  mul_outf(a, b * 2, row);  // same shape: written into the view, so into base
  EXPECT_TRUE(base[1].equal(a * 2));
  Tensor m = empty({5, 5}, kFloat32);
  mm_out(m, ones({2, 3}), ones({3, 2}));
  EXPECT_EQ(m.sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(m.sum().item<float>(), 12.0f);
  Tensor s = empty({}, kFloat64);
  sum_out(s, a.view({2, 2}), 1);
  EXPECT_TRUE(s.equal(tensor({1.0, 5.0}, kFloat64)));
  Tensor i = empty({4}, kInt64);
  EXPECT_TRUE(raises([&] { add_out(i, a, b); }, "add_out",
                     "result type float64 can't be cast to the desired output type int64"));
  Tensor w = ones({4}, kFloat64).requires_grad_();
  EXPECT_TRUE(raises([&] { exp_out(out, w); }, "exp_out",
                     "functions with out=... arguments don't support automatic differentiation"));
}

TEST(LibtorchSurface, NormalWithTensorMeanAndStd) {
  Tensor mean = tensor({0.0, 10.0}, kFloat64).requires_grad_();
  Tensor std = tensor({1.0, 2.0, 3.0}, kFloat64).view({3, 1}).requires_grad_();
  manual_seed(0);
  Tensor y = normal(mean, std);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{3, 2}));
  y.sum().backward();
  EXPECT_TRUE(mean.grad().equal(full({2}, 3.0, kFloat64)));
  Tensor eps = (y.detach() - mean.detach()) / std.detach();
  EXPECT_TRUE(std.grad().allclose(eps.sum(1, true)));
  EXPECT_EQ(normal(mean.detach(), 0.0).sub(mean.detach()).abs().max().item<double>(), 0.0);
  EXPECT_TRUE(raises([&] { normal(mean.detach(), -tensor({1.0}, kFloat64)); }, "normal",
                     "expects all elements of std >= 0.0"));
}

}  // namespace
}  // namespace kiln
