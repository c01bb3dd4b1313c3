// `std::cout << t` prints libtorch's C++ format (at::print in ATen's Formatting.cpp). The expected
// strings are worked out by that algorithm: the number format is chosen over the whole block,
// 1-D tensors print one value per line, the matrices of N-D tensors come with the first index
// varying fastest, and libtorch's type line closes the output.
#include <gtest/gtest.h>

#include <iomanip>
#include <sstream>

#include "kiln/kiln.h"

namespace kiln {
namespace {

std::string str(const Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

TEST(PrintLibtorch, VectorOneValuePerLine) {
  EXPECT_EQ(str(tensor({1.5, 2.25, -3.0})), " 1.5000\n 2.2500\n-3.0000\n[ CPUFloatType{3} ]");
  EXPECT_EQ(str(arange(1, 4)), " 1\n 2\n 3\n[ CPULongType{3} ]");
  EXPECT_EQ(str(tensor({true, false, true})), " 1\n 0\n 1\n[ CPUBoolType{3} ]");
}

TEST(PrintLibtorch, Matrix) {
  EXPECT_EQ(str(ones({2, 3})), " 1  1  1\n 1  1  1\n[ CPUFloatType{2,3} ]");
  EXPECT_EQ(str(tensor({{0.1, -2.5, 3.0}, {4.0, 5.25, 6.0}})),
            " 0.1000 -2.5000  3.0000\n 4.0000  5.2500  6.0000\n[ CPUFloatType{2,3} ]");
  EXPECT_EQ(str(tensor({{1.0, 2.0}}, kFloat64)), " 1  2\n[ CPUDoubleType{1,2} ]");
}

TEST(PrintLibtorch, ThreeAndFourDimensions) {
  EXPECT_EQ(str(arange(8).reshape({2, 2, 2})),
            "(1,.,.) = \n  0  1\n  2  3\n\n(2,.,.) = \n  4  5\n  6  7\n[ CPULongType{2,2,2} ]");
  // The first index varies fastest; each matrix picks its own width.
  EXPECT_EQ(str(arange(16).reshape({2, 2, 2, 2})),
            "(1,1,.,.) = \n  0  1\n  2  3\n\n"
            "(2,1,.,.) = \n   8   9\n  10  11\n\n"
            "(1,2,.,.) = \n  4  5\n  6  7\n\n"
            "(2,2,.,.) = \n  12  13\n  14  15\n"
            "[ CPULongType{2,2,2,2} ]");
}

TEST(PrintLibtorch, ZeroDimUsesSixSignificantDigits) {
  EXPECT_EQ(str(tensor(3.14159)), "3.14159\n[ CPUFloatType{} ]");
  EXPECT_EQ(str(tensor(int64_t{7})), "7\n[ CPULongType{} ]");
}

TEST(PrintLibtorch, ScaleScientificAndLargeIntegers) {
  EXPECT_EQ(str(tensor({0.001, 0.002})), "0.001 *\n 1.0000\n 2.0000\n[ CPUFloatType{2} ]");
  // The scale line; later rows of a scaled matrix are indented by one (as in libtorch).
  EXPECT_EQ(str(tensor({{100000.5, 2000000.25}, {300000.0, 4000000.0}}, kFloat64)),
            "1e+06 *\n 0.1000  2.0000\n  0.3000  4.0000\n[ CPUDoubleType{2,2} ]");
  EXPECT_EQ(str(tensor({1e-8, 1.0})), " 1.0000e-08\n 1.0000e+00\n[ CPUFloatType{2} ]");
  EXPECT_EQ(str(tensor({int64_t{1000000}, int64_t{2}})), "   1e+06\n       2\n[ CPULongType{2} ]");
  EXPECT_EQ(str(tensor({int64_t{10000000000}, int64_t{2}})),
            " 1.0000e+10\n 2.0000e+00\n[ CPULongType{2} ]");
}

TEST(PrintLibtorch, NanAndInfDoNotChooseTheFormat) {
  EXPECT_EQ(str(tensor({NAN, 1.5, INFINITY}, kFloat64)),
            "    nan\n 1.5000\n    inf\n[ CPUDoubleType{3} ]");
}

TEST(PrintLibtorch, WideMatricesSplitIntoColumnBlocks) {
  EXPECT_EQ(str(arange(30.0).reshape({1, 30})),
            "Columns 1 to 20  0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15  16  "
            "17  18  19\n\n"
            "Columns 21 to 30 20  21  22  23  24  25  26  27  28  29\n"
            "[ CPUFloatType{1,30} ]");
}

TEST(PrintLibtorch, EmptyUndefinedAndMeta) {
  EXPECT_EQ(str(zeros({0})), "[ CPUFloatType{0} ]");
  EXPECT_EQ(str(zeros({2, 0})), "[ CPUFloatType{2,0} ]");
  EXPECT_EQ(str(Tensor()), "[ Tensor (undefined) ]");
  EXPECT_EQ(str(empty_meta({2, 3})), "[ MetaFloatType{2,3} ]");
}

TEST(PrintLibtorch, NoAutogradSuffixes) {
  Tensor x = ones({2}).requires_grad_();
  EXPECT_EQ(str(x), " 1\n 1\n[ CPUFloatType{2} ]");
  EXPECT_EQ(str(x * 2), " 2\n 2\n[ CPUFloatType{2} ]");
}

TEST(PrintLibtorch, LeavesTheStreamFormattingAlone) {
  std::ostringstream os;
  os << std::setprecision(2) << 1.23456 << ' ' << tensor({0.5}) << ' ' << 1.23456;
  EXPECT_EQ(os.str(), "1.2  0.5000\n[ CPUFloatType{1} ] 1.2");
}

TEST(PrintLibtorch, ToStringAndPrint) {
  EXPECT_EQ(ones({2, 3}).toString(), "CPUFloatType");
  EXPECT_EQ(arange(3).toString(), "CPULongType");
  ::testing::internal::CaptureStderr();
  ones({2, 3}).print();
  Tensor().print();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "[CPUFloatType [2, 3]]\n[UndefinedTensor]\n");
}

TEST(PrintLibtorch, ReprKeepsPythonsFormat) {
  EXPECT_EQ(repr(tensor({1.5, 2.0})), "tensor([1.5000, 2.0000])");
}

}  // namespace
}  // namespace kiln
