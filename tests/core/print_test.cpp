// kiln::repr: the expected strings are what PyTorch 2's repr() prints for the same tensors, with
// "torch." spelled "kiln.". (operator<< prints libtorch's C++ format: print_libtorch_test.cpp.)
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

namespace kiln {
namespace {

std::string str(const Tensor& t) { return repr(t); }

TEST(Print, FloatMatrix) {
  EXPECT_EQ(str(tensor({{1.5, 2.25}, {3.0, 4.0}})),
            "tensor([[1.5000, 2.2500],\n"
            "        [3.0000, 4.0000]])");
}

TEST(Print, IntegerValuedFloats) {
  EXPECT_EQ(str(tensor({{1.0, 2.0}, {3.0, 4.0}})),
            "tensor([[1., 2.],\n"
            "        [3., 4.]])");
  EXPECT_EQ(str(zeros({2, 2})),
            "tensor([[0., 0.],\n"
            "        [0., 0.]])");
  EXPECT_EQ(str(arange(0, 6, 1, kFloat32).view({2, 3}).t()),
            "tensor([[0., 3.],\n"
            "        [1., 4.],\n"
            "        [2., 5.]])");
}

TEST(Print, DtypeSuffixes) {
  EXPECT_EQ(str(tensor({1.5, 2.5}, kFloat64)), "tensor([1.5000, 2.5000], dtype=kiln.float64)");
  EXPECT_EQ(str(tensor({1.5, 2.25}, kBFloat16)), "tensor([1.5000, 2.2500], dtype=kiln.bfloat16)");
  EXPECT_EQ(str(tensor({0.1, 1000.5}, kFloat16)),
            "tensor([9.9976e-02, 1.0005e+03], dtype=kiln.float16)");
  EXPECT_EQ(str(tensor({1, -2, 30})), "tensor([ 1, -2, 30])");
  EXPECT_EQ(str(tensor({1, -2, 30}, kInt32)), "tensor([ 1, -2, 30], dtype=kiln.int32)");
}

TEST(Print, Bool) {
  EXPECT_EQ(str(tensor({true, false})), "tensor([ True, False])");
  EXPECT_EQ(str(tensor({true}).view({})), "tensor(True)");
}

TEST(Print, ScientificNotation) {
  EXPECT_EQ(str(tensor({1e-5, 1.0})), "tensor([1.0000e-05, 1.0000e+00])");
  EXPECT_EQ(str(tensor({-1e-5, 1.0})), "tensor([-1.0000e-05,  1.0000e+00])");
  EXPECT_EQ(str(tensor({1e10, 1.0})), "tensor([1.0000e+10, 1.0000e+00])");
  EXPECT_EQ(str(tensor({123456.789, 1.5})), "tensor([1.2346e+05, 1.5000e+00])");
  EXPECT_EQ(str(tensor(1e-7)), "tensor(1.0000e-07)");
}

TEST(Print, NanAndInf) {
  EXPECT_EQ(str(tensor({NAN, INFINITY, -INFINITY, 1.5})),
            "tensor([   nan,    inf,   -inf, 1.5000])");
  EXPECT_EQ(str(tensor({NAN})), "tensor([nan])");
  EXPECT_EQ(str(tensor({-NAN})), "tensor([nan])");
  EXPECT_EQ(str(tensor({0.0, INFINITY})), "tensor([0., inf])");
  EXPECT_EQ(str(tensor({NAN, 2.0, -3.0})), "tensor([nan,  2., -3.])");
  EXPECT_EQ(str(tensor({-0.0, 1.5})), "tensor([-0.0000, 1.5000])");
}

TEST(Print, ZeroDim) {
  EXPECT_EQ(str(tensor(3.5)), "tensor(3.5000)");
  EXPECT_EQ(str(tensor(3)), "tensor(3)");
  EXPECT_EQ(str(tensor(-7, kInt32)), "tensor(-7, dtype=kiln.int32)");
}

TEST(Print, Empty) {
  EXPECT_EQ(str(empty({0, 3})), "tensor([], size=(0, 3))");
  EXPECT_EQ(str(empty({0})), "tensor([])");
  EXPECT_EQ(str(empty({0}, kInt64)), "tensor([], dtype=kiln.int64)");
}

TEST(Print, Meta) {
  EXPECT_EQ(str(empty_meta({2, 3})), "tensor(..., device='meta', size=(2, 3))");
  EXPECT_EQ(str(empty_meta({2, 3}, kInt64)),
            "tensor(..., device='meta', size=(2, 3), dtype=kiln.int64)");
  EXPECT_EQ(str(empty_meta({5})), "tensor(..., device='meta', size=(5,))");
}

TEST(Print, LongVectorWraps) {
  EXPECT_EQ(str(arange(0.0, 45.0, 1.5)),
            "tensor([ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,\n"
            "        12.0000, 13.5000, 15.0000, 16.5000, 18.0000, 19.5000, 21.0000, 22.5000,\n"
            "        24.0000, 25.5000, 27.0000, 28.5000, 30.0000, 31.5000, 33.0000, 34.5000,\n"
            "        36.0000, 37.5000, 39.0000, 40.5000, 42.0000, 43.5000])");
}

TEST(Print, SuffixMovesToItsOwnLine) {
  EXPECT_EQ(str(arange(1000.0, 1013.75, 1.25, kFloat64)),
            "tensor([1000.0000, 1001.2500, 1002.5000, 1003.7500, 1005.0000, 1006.2500,\n"
            "        1007.5000, 1008.7500, 1010.0000, 1011.2500, 1012.5000],\n"
            "       dtype=kiln.float64)");
}

TEST(Print, ThreeDims) {
  EXPECT_EQ(str(arange(8).view({2, 2, 2})),
            "tensor([[[0, 1],\n"
            "         [2, 3]],\n"
            "\n"
            "        [[4, 5],\n"
            "         [6, 7]]])");
}

TEST(Print, SummarisesLargeTensors) {
  EXPECT_EQ(str(arange(2000)), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  EXPECT_EQ(str(arange(0.0, 300.0, 0.25).view({40, 30})),
            "tensor([[0.0000e+00, 2.5000e-01, 5.0000e-01,  ..., 6.7500e+00, 7.0000e+00,\n"
            "         7.2500e+00],\n"
            "        [7.5000e+00, 7.7500e+00, 8.0000e+00,  ..., 1.4250e+01, 1.4500e+01,\n"
            "         1.4750e+01],\n"
            "        [1.5000e+01, 1.5250e+01, 1.5500e+01,  ..., 2.1750e+01, 2.2000e+01,\n"
            "         2.2250e+01],\n"
            "        ...,\n"
            "        [2.7750e+02, 2.7775e+02, 2.7800e+02,  ..., 2.8425e+02, 2.8450e+02,\n"
            "         2.8475e+02],\n"
            "        [2.8500e+02, 2.8525e+02, 2.8550e+02,  ..., 2.9175e+02, 2.9200e+02,\n"
            "         2.9225e+02],\n"
            "        [2.9250e+02, 2.9275e+02, 2.9300e+02,  ..., 2.9925e+02, 2.9950e+02,\n"
            "         2.9975e+02]])");
  EXPECT_EQ(str(arange(4000).view({2, 1000, 2})),
            "tensor([[[   0,    1],\n"
            "         [   2,    3],\n"
            "         [   4,    5],\n"
            "         ...,\n"
            "         [1994, 1995],\n"
            "         [1996, 1997],\n"
            "         [1998, 1999]],\n"
            "\n"
            "        [[2000, 2001],\n"
            "         [2002, 2003],\n"
            "         [2004, 2005],\n"
            "         ...,\n"
            "         [3994, 3995],\n"
            "         [3996, 3997],\n"
            "         [3998, 3999]]])");
}

TEST(Print, AutogradSuffixes) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  EXPECT_EQ(str(x), "tensor([1., 2.], requires_grad=True)");
  Tensor y = x * 2;
  EXPECT_EQ(str(y), "tensor([2., 4.], grad_fn=<" + y.grad_fn()->name() + ">)");
}

TEST(Print, DeviceSuffixWhenNotTheDefault) {
  Tensor x = tensor({1.5});
  DeviceGuard guard{Device(kCUDA)};
  EXPECT_EQ(str(x), "tensor([1.5000], device='cpu')");
}

TEST(Print, PrintOptions) {
  const PrintOptions saved = get_printoptions();
  PrintOptions o;
  o.precision = 2;
  set_printoptions(o);
  EXPECT_EQ(str(tensor({1.12345})), "tensor([1.12])");
  o.threshold = 5;
  set_printoptions(o);
  EXPECT_EQ(str(arange(10)), "tensor([0, 1, 2,  ..., 7, 8, 9])");
  o = PrintOptions();
  o.sci_mode = true;
  set_printoptions(o);
  EXPECT_EQ(str(tensor({1.5, 2.0})), "tensor([1.5000e+00, 2.0000e+00])");
  set_printoptions(saved);
}

TEST(Print, Undefined) { EXPECT_EQ(str(Tensor()), "[ Tensor (undefined) ]"); }

}  // namespace
}  // namespace kiln
