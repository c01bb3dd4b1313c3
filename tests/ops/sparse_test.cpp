// Sparse CSR tensors and sparse::mm.
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "kiln/ops/sparse.h"

using namespace kiln;

namespace {

// [[1, 0, 2],
//  [0, 0, 0],
//  [0, 3, 4]]
Tensor example_csr(bool requires_grad = false) {
  Tensor values = kiln::tensor({1.0, 2.0, 3.0, 4.0}, kFloat64);
  if (requires_grad) values.requires_grad_();
  return sparse_csr_tensor(kiln::tensor({0, 2, 2, 4}, kInt64), kiln::tensor({0, 2, 1, 2}, kInt64),
                           values, {3, 3});
}

double at(const Tensor& t, int64_t i, int64_t j) { return t[i][j].item<double>(); }

}  // namespace

TEST(SparseCsr, ConstructsConvertsAndRoundTrips) {
  Tensor a = example_csr();
  EXPECT_TRUE(a.is_sparse_csr());
  EXPECT_EQ(a.sizes().vec(), (std::vector<int64_t>{3, 3}));
  Tensor dense = a.to_dense();
  EXPECT_FALSE(dense.is_sparse_csr());
  EXPECT_DOUBLE_EQ(at(dense, 0, 2), 2.0);
  EXPECT_DOUBLE_EQ(at(dense, 1, 1), 0.0);
  EXPECT_DOUBLE_EQ(at(dense, 2, 1), 3.0);
  Tensor back = dense.to_sparse_csr();
  EXPECT_TRUE(back.crow_indices().equal(a.crow_indices()));
  EXPECT_TRUE(back.col_indices().equal(a.col_indices()));
  EXPECT_TRUE(back.values().equal(a.values()));
}

TEST(SparseCsr, StructureErrorsNameTheProblem) {
  Tensor v = kiln::tensor({1.0, 2.0});
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(
      message([&] {
        sparse_csr_tensor(kiln::tensor({0, 1, 2}, kInt64), kiln::tensor({0, 5}, kInt64), v, {2, 3});
      }).find("col_indices[1] = 5 is out of range for 3 columns"),
      std::string::npos);
  EXPECT_NE(message([&] {
              sparse_csr_tensor(kiln::tensor({0, 2, 1, 2}, kInt64), kiln::tensor({0, 1}, kInt64), v,
                                {3, 3});
            }).find("must be non-decreasing"),
            std::string::npos);
  EXPECT_NE(message([&] { example_csr() + 1; }).find("sparse CSR"), std::string::npos);
  EXPECT_NE(message([&] {
              sparse::mm(example_csr(), zeros({4, 2}, kFloat64));
            }).find("cannot multiply a [3, 3] sparse matrix by a dense [4, 2] matrix"),
            std::string::npos);
  EXPECT_THROW(sparse::mm(example_csr(), zeros({3, 2}, kFloat64), "median"), Error);
}

TEST(SparseCsr, MmReductionsMatchDenseComputation) {
  Tensor x = kiln::tensor({{1.0, -1.0}, {2.0, 0.5}, {-3.0, 4.0}}, kFloat64);
  Tensor a = example_csr();
  Tensor sum = sparse::mm(a, x, "sum");
  EXPECT_TRUE(sum.equal(a.to_dense().matmul(x)));
  // Row 0 holds 1*x[0] = [1, -1] and 2*x[2] = [-6, 8]; row 1 is empty; row 2: [6, 1.5], [-12, 16].
  Tensor mean = sparse::mm(a, x, "mean");
  EXPECT_DOUBLE_EQ(at(mean, 0, 0), -2.5);
  EXPECT_DOUBLE_EQ(at(mean, 1, 1), 0.0);
  Tensor amax = sparse::mm(a, x, "amax");
  EXPECT_DOUBLE_EQ(at(amax, 0, 0), 1.0);
  EXPECT_DOUBLE_EQ(at(amax, 0, 1), 8.0);
  EXPECT_DOUBLE_EQ(at(amax, 2, 0), 6.0);
  Tensor amin = sparse::mm(a, x, "amin");
  EXPECT_DOUBLE_EQ(at(amin, 2, 0), -12.0);
  EXPECT_DOUBLE_EQ(at(amin, 1, 0), 0.0);
}

TEST(SparseCsr, GradientsReachValuesAndDense) {
  for (const char* reduce : {"sum", "mean", "amax"}) {
    SCOPED_TRACE(reduce);
    Tensor a = example_csr(/*requires_grad=*/true);
    Tensor x = kiln::tensor({{1.0, -1.0}, {2.0, 0.5}, {-3.0, 4.0}}, kFloat64).requires_grad_();
    Tensor w = kiln::tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}, kFloat64);
    (sparse::mm(a, x, reduce) * w).sum().backward();
    const Tensor& gv = a.values().grad();
    ASSERT_TRUE(gv.defined());
    if (std::string(reduce) == "sum") {
      // d/dv_j = sum_f w[row, f] * x[col, f]: entry 1 is (row 0, col 2): 1*-3 + 2*4 = 5.
      EXPECT_DOUBLE_EQ(gv[1].item<double>(), 5.0);
      // d/dx[2] = sum over entries in column 2 of v * w[row]: 2*[1, 2] + 4*[5, 6] = [22, 28].
      EXPECT_DOUBLE_EQ(at(x.grad(), 2, 0), 22.0);
      EXPECT_DOUBLE_EQ(at(x.grad(), 2, 1), 28.0);
    } else if (std::string(reduce) == "mean") {
      EXPECT_DOUBLE_EQ(gv[1].item<double>(), 2.5);
      EXPECT_DOUBLE_EQ(at(x.grad(), 2, 0), 11.0);
    } else {
      // amax row 0 picks entry 0 in column 0 (1 > -6) and entry 1 in column 1 (8 > -1).
      EXPECT_DOUBLE_EQ(gv[0].item<double>(), 1.0 * 1.0);
      EXPECT_DOUBLE_EQ(gv[1].item<double>(), 2.0 * 4.0);
      EXPECT_DOUBLE_EQ(at(x.grad(), 0, 1), 0.0);
    }
  }
}

TEST(SparseCsr, ToDenseGradientAndDenseInputGradient) {
  Tensor a = example_csr(/*requires_grad=*/true);
  (a.to_dense() * kiln::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}, {7.0, 8.0, 9.0}}, kFloat64))
      .sum()
      .backward();
  EXPECT_TRUE(a.values().grad().equal(kiln::tensor({1.0, 3.0, 8.0, 9.0}, kFloat64)));

  Tensor d = kiln::tensor({{0.0, 2.0}, {3.0, 0.0}}, kFloat64).requires_grad_();
  Tensor csr = d.to_sparse_csr();
  sparse::mm(csr, kiln::ones({2, 1}, kFloat64)).sum().backward();
  EXPECT_DOUBLE_EQ(at(d.grad(), 0, 1), 1.0);
  EXPECT_DOUBLE_EQ(at(d.grad(), 0, 0), 0.0);  // not stored: no gradient
}

// float32 rows with 41 features: a block of 32 that the kernel keeps in registers and a rest of
// 9 that it folds through memory. Small integer values make ties, which go to the first entry
// (seen in the gradient of the values); rows 3 and 7 are empty.
TEST(SparseCsr, ExtremesOfWideFloatRowsMatchALoop) {
  const int64_t rows = 12, cols = 9, F = 41;
  std::vector<int64_t> crow{0}, col;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t n = (i == 3 || i == 7) ? 0 : 1 + (i * 5) % 6;
    for (int64_t k = 0; k < n; ++k) col.push_back((i + 2 * k) % cols);
    crow.push_back(static_cast<int64_t>(col.size()));
  }
  const int64_t nnz = static_cast<int64_t>(col.size());
  Tensor values = (kiln::randint(-3, 4, {nnz}).to(kFloat32) + 0.5f).requires_grad_();
  Tensor dense = kiln::randint(-4, 5, {cols, F}).to(kFloat32);
  for (const char* reduce : {"amax", "amin"}) {
    SCOPED_TRACE(reduce);
    const bool is_max = std::string(reduce) == "amax";
    values.mutable_grad() = Tensor();
    Tensor a = sparse_csr_tensor(kiln::tensor(crow, kInt64), kiln::tensor(col, kInt64), values,
                                 {rows, cols});
    Tensor out = sparse::mm(a, dense, reduce);
    out.sum().backward();
    std::vector<double> want_grad(nnz, 0.0);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t f = 0; f < F; ++f) {
        double best = 0;
        int64_t pick = -1;
        for (int64_t j = crow[i]; j < crow[i + 1]; ++j) {
          const double c = values[j].item<double>() * at(dense, col[j], f);
          if (pick < 0 || (is_max ? c > best : c < best)) best = c, pick = j;
        }
        ASSERT_EQ(at(out, i, f), best) << "row " << i << " feature " << f;
        if (pick >= 0) want_grad[pick] += at(dense, col[pick], f);
      }
    }
    for (int64_t j = 0; j < nnz; ++j)
      EXPECT_EQ(values.grad()[j].item<double>(), want_grad[j]) << "entry " << j;
  }
}
