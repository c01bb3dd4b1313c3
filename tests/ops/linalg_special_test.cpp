// kiln::linalg and kiln::special (torch::linalg / torch::special): values from PyTorch 2 on the
// same inputs, and the clear errors for what Kiln does not compute.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor matrix() { return tensor({{1.0f, -2.0f, 3.0f}, {-4.0f, 5.0f, -6.0f}}); }

TEST(Linalg, MatrixNormsMatchPyTorch) {
  EXPECT_FLOAT_EQ(linalg::matrix_norm(matrix(), 1).item<float>(), 9.0f);
  EXPECT_FLOAT_EQ(linalg::matrix_norm(matrix(), -1).item<float>(), 5.0f);
  EXPECT_FLOAT_EQ(linalg::matrix_norm(matrix(), kInf).item<float>(), 15.0f);
  EXPECT_FLOAT_EQ(linalg::matrix_norm(matrix(), -kInf).item<float>(), 6.0f);
  EXPECT_FLOAT_EQ(linalg::matrix_norm(matrix()).item<float>(), 9.539392471f);
  EXPECT_EQ(linalg::matrix_norm(matrix(), 1, {-2, -1}, /*keepdim=*/true).sizes(),
            (std::vector<int64_t>{1, 1}));
  const Tensor batch = stack({matrix(), matrix() * 2});
  const Tensor norms = linalg::matrix_norm(batch, kInf);
  EXPECT_FLOAT_EQ(norms[1].item<float>(), 30.0f);
  EXPECT_THROW(linalg::matrix_norm(matrix(), "nuc"), Error);
  EXPECT_THROW(linalg::matrix_norm(matrix(), 2), Error);
  EXPECT_THROW(linalg::matrix_norm(tensor({1.0f}), 1), Error);
}

TEST(Linalg, VectorNormAndNormMatchPyTorch) {
  EXPECT_NEAR(linalg::vector_norm(matrix(), 3).item<float>(), 7.611662864f, 1e-5);
  const std::vector<int64_t> dim1{1};
  const Tensor rows = linalg::vector_norm(matrix(), 1, dim1);
  EXPECT_FLOAT_EQ(rows[0].item<float>(), 6.0f);
  EXPECT_FLOAT_EQ(rows[1].item<float>(), 15.0f);
  EXPECT_FLOAT_EQ(linalg::norm(matrix()).item<float>(), 9.539392471f);
  EXPECT_FLOAT_EQ(linalg::norm(matrix(), 1).item<float>(), 9.0f);  // 2-D with ord: matrix norm
  EXPECT_FLOAT_EQ(linalg::norm(matrix(), "fro").item<float>(), 9.539392471f);
  EXPECT_THROW(linalg::norm(randn({2, 2, 2}), 1), Error);
}

TEST(Linalg, CrossMultiDotMatrixPower) {
  const Tensor c = linalg::cross(tensor({1.0f, 2.0f, 3.0f}), tensor({-1.0f, 0.5f, 2.0f}));
  EXPECT_TRUE(c.equal(tensor({2.5f, -5.0f, 2.5f})));
  EXPECT_THROW(linalg::cross(tensor({1.0f, 2.0f}), tensor({1.0f, 2.0f})), Error);
  const Tensor fib = tensor({{1.0f, 1.0f}, {1.0f, 0.0f}});
  EXPECT_TRUE(linalg::matrix_power(fib, 5).equal(tensor({{8.0f, 5.0f}, {5.0f, 3.0f}})));
  EXPECT_TRUE(linalg::matrix_power(fib, 0).equal(eye(2)));
  EXPECT_THROW(linalg::matrix_power(fib, -1), Error);
  const Tensor a = randn({2, 3}), b = randn({3, 4}), v = randn({4});
  EXPECT_TRUE(allclose(linalg::multi_dot({a, b, v}), a.matmul(b).matmul(v), 1e-5, 1e-6));
  EXPECT_TRUE(allclose(linalg::vecdot(a, a), (a * a).sum({-1}), 1e-6, 1e-6));
}

TEST(Special, CompositionsMatchPyTorch) {
  const Tensor x = tensor({-1.0f, 0.0f, 0.5f, 2.0f});
  const std::vector<float> entr{-std::numeric_limits<float>::infinity(), 0.0f, 0.34657359f,
                                -1.38629436f};
  const std::vector<float> sinc{0.0f, 1.0f, 0.63661975f, 0.0f};
  const std::vector<float> ndtr{0.15865526f, 0.5f, 0.69146246f, 0.97724986f};
  for (int64_t i = 0; i < 4; ++i) {
    const size_t k = static_cast<size_t>(i);
    EXPECT_FLOAT_EQ(special::entr(x)[i].item<float>(), entr[k]);
    EXPECT_NEAR(special::sinc(x)[i].item<float>(), sinc[k], 1e-6);
    EXPECT_NEAR(special::ndtr(x)[i].item<float>(), ndtr[k], 1e-6);
  }
  const Tensor xl =
      special::xlogy(tensor({0.0f, 0.0f, 2.0f, 3.0f}), tensor({0.0f, std::nanf(""), 3.0f, 0.5f}));
  EXPECT_EQ(xl[0].item<float>(), 0.0f);
  EXPECT_TRUE(std::isnan(xl[1].item<float>()));
  EXPECT_NEAR(xl[2].item<float>(), 2.19722462f, 1e-6);
  EXPECT_NEAR(xl[3].item<float>(), -2.07944155f, 1e-6);
  EXPECT_TRUE(special::expit(x).equal(x.sigmoid()));

  // sinc at 0 has a finite gradient (0), not NaN.
  const Tensor z = zeros({1}).requires_grad_();
  special::sinc(z).sum().backward();
  EXPECT_EQ(z.grad()[0].item<float>(), 0.0f);
}

}  // namespace
}  // namespace kiln
