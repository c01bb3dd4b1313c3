// Linear algebra beyond the op table: matmul's broadcasting cases, linear, einsum, symbolic
// shapes, error messages, gradients of the compositions, and the BLAS/oneDNN back ends.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <sstream>

#include "kiln/backend/cpu/blas.h"
#include "kiln/backend/cpu/dnnl_matmul.h"
#include "kiln/kiln.h"
#include "kiln/ops/linalg/util.h"
#include "kiln/ops/samples.h"
#include "tests/compile/cache_dir.h"

namespace kiln {
namespace {

using samples::make;
using Shape = std::vector<int64_t>;

std::string shape_str(const Tensor& t) {
  std::ostringstream os;
  os << t.sym_sizes();
  return os.str();
}

// Element-wise comparison with a float64 expectation.
void expect_close(const Tensor& got, const Tensor& want, double atol = 1e-9, double rtol = 1e-9) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec());
  Tensor g = got.detach().to(kFloat64).contiguous(), w = want.detach().to(kFloat64).contiguous();
  for (int64_t i = 0; i < g.numel(); ++i) {
    const double x = g.data_ptr<double>()[i], y = w.data_ptr<double>()[i];
    ASSERT_NEAR(x, y, atol + rtol * std::abs(y)) << "at flat index " << i;
  }
}

// PyTorch's matmul semantics spelled out with loops: a 1-D operand is a row (left) or column
// (right) that is dropped from the result; batch dims broadcast.
Tensor naive_matmul(const Tensor& a_in, const Tensor& b_in) {
  Tensor a = a_in.to(kFloat64).contiguous(), b = b_in.to(kFloat64).contiguous();
  Shape as = a.sizes().vec(), bs = b.sizes().vec();
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  const int64_t n = as[as.size() - 2], k = as.back(), m = bs.back();
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  const size_t nb = std::max(ab.size(), bb.size());
  ab.insert(ab.begin(), nb - ab.size(), 1);
  bb.insert(bb.begin(), nb - bb.size(), 1);
  Shape batch(nb);
  int64_t batches = 1;
  for (size_t d = 0; d < nb; ++d) batches *= (batch[d] = ab[d] == 1 ? bb[d] : ab[d]);
  Shape out_shape = batch;
  out_shape.push_back(n);
  out_shape.push_back(m);
  Tensor out = zeros(out_shape, kFloat64);
  for (int64_t q = 0; q < batches; ++q) {
    int64_t rem = q, ai = 0, bi = 0, amul = 1, bmul = 1;
    for (int64_t d = static_cast<int64_t>(nb) - 1; d >= 0; --d) {
      const int64_t idx = rem % batch[d];
      rem /= batch[d];
      ai += (ab[d] == 1 ? 0 : idx) * amul;
      bi += (bb[d] == 1 ? 0 : idx) * bmul;
      amul *= ab[d];
      bmul *= bb[d];
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += a.data_ptr<double>()[(ai * n + i) * k + p] *
                 b.data_ptr<double>()[(bi * k + p) * m + j];
        out.data_ptr<double>()[(q * n + i) * m + j] = acc;
      }
  }
  Shape final_shape = batch;
  if (!a_vec) final_shape.push_back(n);
  if (!b_vec) final_shape.push_back(m);
  return out.reshape(final_shape);
}

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// Compares autograd's gradients (second_order: gradients of a weighted sum of the gradients)
// with central differences, in float64. Inputs are contiguous float64 leaves.
void expect_gradients_match(const Fn& f, std::vector<Tensor> inputs, bool second_order = false) {
  for (auto& x : inputs) x = x.to(kFloat64).contiguous().detach().requires_grad_(true);
  Tensor w = make(f(inputs).sizes().vec(), kFloat64, -1, 1);
  std::vector<Tensor> v;
  for (const auto& x : inputs) v.push_back(make(x.sizes().vec(), kFloat64, -1, 1));
  auto objective = [&](bool create_graph) {
    Tensor l = (f(inputs) * w).sum();
    if (!second_order) return l;
    auto g = autograd::grad({l}, inputs, {}, true, create_graph, true);
    Tensor total = zeros({}, kFloat64);
    for (size_t i = 0; i < g.size(); ++i)
      if (g[i].defined()) total = total + (g[i] * v[i]).sum();
    return total;
  };
  std::vector<Tensor> analytic = autograd::grad({objective(true)}, inputs, {}, false, false, true);
  const double eps = 1e-6;
  for (size_t k = 0; k < inputs.size(); ++k) {
    double* p = inputs[k].data_ptr<double>();
    Tensor a = analytic[k].defined() ? analytic[k].contiguous() : zeros_like(inputs[k]);
    for (int64_t j = 0; j < inputs[k].numel(); ++j) {
      const double orig = p[j];
      p[j] = orig + eps;
      const double plus = objective(false).item<double>();
      p[j] = orig - eps;
      const double minus = objective(false).item<double>();
      p[j] = orig;
      const double numeric = (plus - minus) / (2 * eps);
      EXPECT_NEAR(a.data_ptr<double>()[j], numeric, 1e-5 + 1e-4 * std::abs(numeric))
          << "input " << k << " element " << j << (second_order ? " (second order)" : "");
    }
  }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// ---------------------------------------------------------------------------------------------

TEST(Matmul, EveryBroadcastingCaseMatchesLoops) {
  struct Case {
    Shape a, b, out;
  };
  const std::vector<Case> cases = {
      {{3}, {3}, {}},                           // dot
      {{2, 3}, {3}, {2}},                       // matrix-vector
      {{3}, {3, 4}, {4}},                       // vector-matrix
      {{2, 3}, {3, 4}, {2, 4}},                 // mm
      {{2, 5, 3}, {3, 4}, {2, 5, 4}},           // batched @ matrix (folded into one mm)
      {{2, 5, 3}, {3}, {2, 5}},                 // batched @ vector
      {{3}, {2, 3, 4}, {2, 4}},                 // vector @ batched
      {{5, 3}, {2, 3, 4}, {2, 5, 4}},           // matrix @ batched
      {{2, 5, 3}, {2, 3, 4}, {2, 5, 4}},        // bmm
      {{2, 1, 5, 3}, {4, 3, 6}, {2, 4, 5, 6}},  // batch dims broadcast
      {{1, 5, 3}, {3, 3, 2}, {3, 5, 2}},        // size-1 batch broadcast
      {{2, 0}, {0, 3}, {2, 3}},                 // zero-size k
      {{0, 2, 3}, {3, 4}, {0, 2, 4}},           // zero batch
  };
  for (ScalarType dt : {kFloat64, kFloat32}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(shape_str(make(c.a, dt)) + " @ " + shape_str(make(c.b, dt)));
      Tensor a = make(c.a, dt), b = make(c.b, dt);
      Tensor y = matmul(a, b);
      EXPECT_EQ(y.sizes().vec(), c.out);
      EXPECT_EQ(y.dtype(), dt);
      expect_close(y, naive_matmul(a, b), 1e-5, 1e-5);
      expect_close(a.matmul(b), y);
    }
  }
}

TEST(Matmul, NonContiguousAndTransposedOperands) {
  Tensor a = make({4, 2, 3}, kFloat32).permute(Shape{1, 2, 0});  // [2, 3, 4], no dense dim
  Tensor b = make({2, 5, 4}, kFloat32).transpose(1, 2);          // [2, 4, 5], column-major
  expect_close(matmul(a, b), naive_matmul(a, b), 1e-5, 1e-5);
  Tensor c = make({6, 8}, kFloat32, -3, 3, true);       // padded rows
  Tensor d = make({8, 3}, kFloat32).expand({2, 8, 3});  // 0-stride batch
  expect_close(matmul(c, d), naive_matmul(c, d), 1e-5, 1e-5);
  Tensor w = make({5, 8}, kFloat32).t();  // a linear layer's weight: column-major, shared
  expect_close(matmul(c, w), naive_matmul(c, w), 1e-5, 1e-5);
  expect_close(matmul(c.expand({3, 6, 8}), w), naive_matmul(c.expand({3, 6, 8}), w), 1e-5, 1e-5);
  Tensor e = make({1, 8}, kFloat64).expand({6, 8});  // 0-stride rows: copied for BLAS
  Tensor f = make({8, 2}, kFloat64);
  expect_close(matmul(e, f), naive_matmul(e, f));
}

TEST(Matmul, LargeProductsAcrossThreadCounts) {
  Tensor a = make({130, 257}, kFloat32), b = make({257, 70}, kFloat32);
  Tensor want = naive_matmul(a, b);
  const int threads = get_num_threads();
  for (int t : {1, 2}) {
    set_num_threads(t);
    expect_close(matmul(a, b), want, 1e-3, 1e-4);
    expect_close(matmul(a.t().contiguous().t(), b), want, 1e-3, 1e-4);  // transposed view
  }
  set_num_threads(threads);
  // A batch of column-major matrices times a shared one, large enough for oneDNN where
  // OpenBLAS has only its generic kernels (kiln info: "float32 matmul").
  Tensor p = make({2, 160, 130}, kFloat32).transpose(1, 2), q = make({160, 110}, kFloat32);
  expect_close(matmul(p, q), naive_matmul(p, q), 1e-3, 1e-4);
  std::cout << "float32 matmul path: " << cpu::f32_gemm_path() << "\n";
}

TEST(Matmul, IntegerAndBFloat16) {
  Tensor a = make({3, 4}, kInt64), b = make({4, 5}, kInt64);
  Tensor y = matmul(a, b);
  EXPECT_EQ(y.dtype(), kInt64);
  expect_close(y, naive_matmul(a, b), 0, 0);
  expect_close(matmul(a.to(kInt32), b.to(kInt32)), naive_matmul(a, b), 0, 0);

  Tensor x = make({2, 33, 65}, kBFloat16), w = make({65, 17}, kBFloat16);
  Tensor z = matmul(x, w);
  EXPECT_EQ(z.dtype(), kBFloat16);
  expect_close(z, naive_matmul(x, w), 0.1, 1e-2);
  std::cout << "bfloat16 matmul path: " << cpu::bf16_gemm_path() << "\n";
}

TEST(Matmul, ErrorsNameBothShapes) {
  EXPECT_EQ(error_of([] {
              matmul(zeros({2, 3}), zeros({4, 5}));
            }),
            "matmul: cannot multiply [2, 3] by [4, 5]: 3 != 4");
  EXPECT_EQ(error_of([] { matmul(zeros({3}), zeros({4})); }),
            "matmul: cannot multiply [3] by [4]: 3 != 4");
  EXPECT_EQ(
      error_of([] {
        matmul(zeros({2, 2, 3}), zeros({3, 3, 4}));
      }),
      "matmul: cannot broadcast the batch dims of [2, 2, 3] and [3, 3, 4]: 2 != 3 at batch dim 0");
  EXPECT_EQ(error_of([] { matmul(zeros({}), zeros({3})); }),
            "matmul: both arguments to matmul need to be at least 1D, but they are 0D and 1D "
            "(shapes [] and [3])");
  EXPECT_EQ(error_of([] {
              mm(zeros({2, 3}), zeros({4, 5}));
            }),
            "mm: cannot multiply [2, 3] by [4, 5]: 3 != 4");
  EXPECT_EQ(error_of([] {
              mm(zeros({2, 3}), zeros({3}));
            }),
            "mm: expected mat2 to be a 2-D tensor, but got a 1-D tensor of shape [3]");
  EXPECT_EQ(error_of([] {
              mm(zeros({2, 3}), zeros({3, 2}, kFloat64));
            }),
            "mm: expected self and mat2 to have the same dtype, but got float32 and float64");
  EXPECT_EQ(error_of([] {
              bmm(zeros({2, 2, 3}), zeros({3, 3, 4}));
            }),
            "bmm: self and mat2 must have the same number of batches, but got 2 and 3");
  EXPECT_EQ(
      error_of([] { dot(zeros({3}), zeros({4})); }),
      "dot: inconsistent tensor size, expected tensor [3] and src [4] to have the same number "
      "of elements, but got 3 and 4 elements respectively");
  EXPECT_EQ(error_of([] {
              addmm(zeros({4}), zeros({2, 3}), zeros({3, 5}));
            }),
            "addmm: self of shape [4] cannot be broadcast to the product's shape [2, 5]");
  EXPECT_EQ(error_of([] {
              addmm(zeros({5}, kInt64), zeros({2, 3}, kInt64), zeros({3, 5}, kInt64), 0.5);
            }),
            "addmm: for integral input tensors, argument beta must not be a floating point number "
            "(got 0.5)");
  EXPECT_EQ(
      error_of([] {
        linear(zeros({2, 3}), zeros({5, 4}));
      }),
      "linear: input of shape [2, 3] and weight of shape [5, 4] do not match: input's last dim 3 "
      "!= in_features 4");
}

TEST(Matmul, SymbolicShapes) {
  ShapeEnv env;
  SymInt s0 = env.create_symbol(5), s1 = env.create_symbol(3);
  EXPECT_EQ(shape_str(matmul(empty_meta({s0, 8}), empty_meta({8, 16}))), "[s0, 16]");
  EXPECT_EQ(shape_str(matmul(empty_meta({s0, s1, 8}), empty_meta({8, 16}))), "[s0, s1, 16]");
  EXPECT_EQ(shape_str(matmul(empty_meta({s0, 4, 8}), empty_meta({s0, 8, s1}))), "[s0, 4, s1]");
  EXPECT_EQ(shape_str(matmul(empty_meta({8}), empty_meta({s0, 8, 2}))), "[s0, 2]");
  EXPECT_EQ(shape_str(linear(empty_meta({s0, 8}), empty_meta({16, 8}), empty_meta({16}))),
            "[s0, 16]");
  EXPECT_EQ(shape_str(einsum("bij,bjk->bik", {empty_meta({s0, 2, 8}), empty_meta({s0, 8, 3})})),
            "[s0, 2, 3]");
  EXPECT_EQ(shape_str(addmm(empty_meta({16}), empty_meta({s0, 8}), empty_meta({8, 16}))),
            "[s0, 16]");
}

TEST(Matmul, TracesAsProductEntries) {
  auto rec = std::make_shared<RecordingMode>();
  Tensor a = make({2, 3}, kFloat32), b = make({3, 4}, kFloat32);
  {
    ModeGuard g(rec);
    matmul(a, b);
  }
  ASSERT_EQ(rec->ops().size(), 1u);
  EXPECT_EQ(rec->ops()[0].name, "mm");
}

TEST(Matmul, GradientsOfEveryPath) {
  const std::vector<std::pair<Shape, Shape>> cases = {{{3}, {3}},
                                                      {{2, 3}, {3}},
                                                      {{3}, {3, 2}},
                                                      {{2, 3}, {3, 2}},
                                                      {{2, 2, 3}, {3, 2}},
                                                      {{3}, {2, 3, 2}},
                                                      {{2, 1, 2, 3}, {3, 3, 2}}};
  for (const auto& [sa, sb] : cases) {
    SCOPED_TRACE(::testing::PrintToString(sa) + " @ " + ::testing::PrintToString(sb));
    expect_gradients_match([](const std::vector<Tensor>& x) { return matmul(x[0], x[1]); },
                           {make(sa, kFloat64), make(sb, kFloat64)});
  }
  // Transposed operands and double backward through mm/bmm.
  expect_gradients_match(
      [](const std::vector<Tensor>& x) { return matmul(x[0].transpose(-1, -2), x[1]); },
      {make({2, 3, 2}, kFloat64), make({2, 3, 2}, kFloat64)}, /*second_order=*/true);
}

TEST(Linear, MatchesMatmulPlusBias) {
  Tensor w = make({5, 4}, kFloat64), bias = make({5}, kFloat64);
  for (const Shape& s : {Shape{4}, Shape{3, 4}, Shape{2, 3, 4}}) {
    Tensor x = make(s, kFloat64);
    Tensor want = naive_matmul(x, w.t()) + bias;
    expect_close(linear(x, w, bias), want, 1e-12, 1e-12);
    expect_close(linear(x, w), naive_matmul(x, w.t()), 1e-12, 1e-12);
  }
  expect_gradients_match([](const std::vector<Tensor>& x) { return linear(x[0], x[1], x[2]); },
                         {make({2, 3, 4}, kFloat64), make({5, 4}, kFloat64), make({5}, kFloat64)},
                         /*second_order=*/true);
}

TEST(Addmm, BetaZeroIgnoresNanAndScalesApply) {
  Tensor self = full({2, 3}, std::numeric_limits<double>::quiet_NaN(), kFloat32);
  Tensor a = make({2, 4}, kFloat32), b = make({4, 3}, kFloat32);
  expect_close(addmm(self, a, b, 0, 2), naive_matmul(a, b) * 2.0, 1e-5, 1e-5);
  Tensor bias = make({3}, kFloat32);
  expect_close(addmm(bias, a, b, 0.5, -1), naive_matmul(a, b) * -1.0 + bias.to(kFloat64) * 0.5,
               1e-5, 1e-5);
  Tensor s3 = make({2, 1, 3}, kFloat64), b1 = make({2, 2, 4}, kFloat64),
         b2 = make({2, 4, 3}, kFloat64);
  expect_close(baddbmm(s3, b1, b2, 2, 3), naive_matmul(b1, b2) * 3.0 + s3 * 2.0);
}

TEST(Addmm, TinyProductsSkipBlasWithTheSameResults) {
  // At most 32 multiply-adds per matrix run a plain loop; alpha, beta, NaN-ignoring and
  // transposed operands behave as on the BLAS path.
  for (ScalarType dt : {kFloat64, kFloat32, kBFloat16}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    Tensor a = make({2, 3}, dt).t(), b = make({2, 2}, dt).t(), bias = make({2}, dt);
    const double tol = dt == kBFloat16 ? 5e-2 : 1e-5;
    expect_close(addmm(bias, a, b, 0.5, 2), naive_matmul(a, b) * 2.0 + bias.to(kFloat64) * 0.5, tol,
                 tol);
    Tensor nan_self = full({3, 2}, std::numeric_limits<double>::quiet_NaN(), dt);
    expect_close(addmm(nan_self, a, b, 0, 1), naive_matmul(a, b), tol, tol);
    Tensor x = make({4, 1, 2}, dt).transpose(1, 2), y = make({4, 1, 3}, dt);
    expect_close(bmm(x, y), naive_matmul(x, y), tol, tol);
  }
}

TEST(Einsum, CommonFormsMatchReferences) {
  Tensor A = make({3, 4}, kFloat64), B = make({4, 5}, kFloat64), S = make({4, 4}, kFloat64);
  Tensor u = make({4}, kFloat64), v = make({6}, kFloat64);
  Tensor X = make({2, 3, 4}, kFloat64), Y = make({2, 4, 5}, kFloat64);
  Tensor Q = make({2, 3, 5, 4}, kFloat64), K = make({2, 3, 6, 4}, kFloat64);

  expect_close(einsum("ij,jk->ik", {A, B}), naive_matmul(A, B), 1e-12, 1e-12);
  expect_close(einsum("ij,jk", {A, B}), naive_matmul(A, B), 1e-12, 1e-12);  // implicit output
  expect_close(einsum("bij,bjk->bik", {X, Y}), naive_matmul(X, Y), 1e-12, 1e-12);
  expect_close(einsum("ij->ji", {A}), A.t().contiguous());
  expect_close(einsum("ji", {A}), A.t().contiguous());  // implicit output sorts labels: i, j
  expect_close(einsum("i,i->", {u, u}), naive_matmul(u, u), 1e-12, 1e-12);
  expect_close(einsum("i,j->ij", {u, v}), naive_matmul(u.reshape({4, 1}), v.reshape({1, 6})));
  expect_close(einsum("bhqd,bhkd->bhqk", {Q, K}), naive_matmul(Q, K.transpose(-1, -2)), 1e-12,
               1e-12);
  expect_close(einsum("...ij,...jk->...ik", {X, Y}), naive_matmul(X, Y), 1e-12, 1e-12);
  expect_close(einsum("...ij,jk", {X, B}), naive_matmul(X, B), 1e-12, 1e-12);
  expect_close(einsum("ij->", {A}), A.sum(), 1e-12, 1e-12);
  expect_close(einsum("ij->j", {A}), A.sum(Shape{0}), 1e-12, 1e-12);

  Tensor same = einsum("ij->ij", {A});
  EXPECT_FALSE(same.is_same(A));  // a new view, not the operand's handle
  expect_close(same, A);

  Tensor diag = einsum("ii->i", {S});
  ASSERT_EQ(diag.sizes().vec(), Shape{4});
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_DOUBLE_EQ(diag.data_ptr<double>()[i * diag.stride(0)], S.data_ptr<double>()[i * 5]);
  EXPECT_NEAR(einsum("ii", {S}).item<double>(),
              S.data_ptr<double>()[0] + S.data_ptr<double>()[5] + S.data_ptr<double>()[10] +
                  S.data_ptr<double>()[15],
              1e-12);
  // Three operands, contracted left to right: (A B) v.
  Tensor w5 = make({5}, kFloat64);
  expect_close(einsum("ij,jk,k->i", {A, B, w5}), naive_matmul(naive_matmul(A, B), w5), 1e-12,
               1e-12);
  // Size-1 dims broadcast.
  Tensor b1 = make({1, 3, 4}, kFloat64);
  expect_close(einsum("bij,bjk->bik", {b1, Y}), naive_matmul(b1, Y), 1e-12, 1e-12);
}

TEST(Einsum, Gradients) {
  expect_gradients_match(
      [](const std::vector<Tensor>& x) {
        return einsum("bhqd,bhkd->bhqk", {x[0], x[1]});
      },
      {make({1, 2, 3, 2}, kFloat64), make({1, 2, 2, 2}, kFloat64)}, /*second_order=*/true);
  expect_gradients_match([](const std::vector<Tensor>& x) { return einsum("ii->i", {x[0]}); },
                         {make({3, 3}, kFloat64)});
  expect_gradients_match(
      [](const std::vector<Tensor>& x) {
        return einsum("i,j->ij", {x[0], x[1]});
      },
      {make({3}, kFloat64), make({2}, kFloat64)});
}

TEST(Einsum, Errors) {
  Tensor A = zeros({3, 4}), B = zeros({5, 6});
  EXPECT_EQ(error_of([&] {
              einsum("ij,jk->ik", {A, B});
            }),
            "einsum: operands do not broadcast: subscript j has size 4 and 5 (operand 1)");
  EXPECT_EQ(error_of([&] { einsum("ijk->i", {A}); }),
            "einsum: the number of subscripts in the equation (3) does not match the number of "
            "dimensions (2) for operand 0 and no ellipsis was given");
  EXPECT_EQ(error_of([&] { einsum("ij->iz", {A}); }),
            "einsum: output subscript z does not appear in the equation for any input operand");
  EXPECT_EQ(error_of([&] { einsum("ij,jk->ik", {A}); }),
            "einsum: fewer operands (1) were provided than specified in the equation 'ij,jk->ik'");
  EXPECT_EQ(error_of([&] { einsum("ij->ii", {A}); }),
            "einsum: output subscript i appears more than once in the output");
  EXPECT_EQ(error_of([&] { einsum("ii->i", {A}); }),
            "einsum: subscript i is repeated for operand 0 but the sizes don't match, 3 != 4");
}

TEST(Blas, OneDnnMatmulAgreesWithOpenBlasOnFloat32) {
  // bfloat16 goes through the same oneDNN wrapper where the CPU has a bf16 matmul; float32 runs
  // everywhere, so the wrapper's strides, broadcast batch, alpha and beta are checked with it.
  if (!cpu::onednn::has_matmul(kFloat32)) GTEST_SKIP() << "oneDNN has no float32 matmul here";
  Tensor a = make({3, 6, 5}, kFloat32).transpose(1, 2);  // [3, 5, 6], column-major matrices
  Tensor b = make({6, 4}, kFloat32);                     // repeated over the batch
  Tensor c = make({3, 5, 4}, kFloat32);
  Tensor want = naive_matmul(a, b) * 2.0 + c.to(kFloat64) * 0.5;
  cpu::GemmArgs g;
  g.dtype = kFloat32;
  g.batch = 3;
  g.m = 5;
  g.n = 4;
  g.k = 6;
  g.a = linalg::matrix_ref(a);
  g.b = linalg::matrix_ref(b);
  g.c = c.data_ptr();
  g.c_batch_stride = 20;
  g.ldc = 4;
  g.alpha = 2;
  g.beta = 0.5;
  ASSERT_TRUE(cpu::onednn::matmul(g));
  expect_close(c, want, 1e-4, 1e-5);
}

// _int_mm's sums reach past int16 and, at k = 1024 with -128 * -128, 2^24: both implementations
// (oneDNN's s8 x s8 -> s32 matmul where it has one, Kiln's int32 loop) give the exact int32 sums.
TEST(IntMm, ExactInt32SumsOnEveryImplementation) {
  const Tensor a = full({8, 1024}, -128, TensorOptions(kInt8));
  const Tensor b = full({1024, 40}, -128, TensorOptions(kInt8));
  const Tensor got = _int_mm(a, b);
  EXPECT_EQ(got.dtype(), kInt32);
  EXPECT_TRUE(equal(got, full({8, 40}, 16777216, TensorOptions(kInt32))));
  const Tensor x = make({37, 70}, kInt8, -128, 128), w = make({53, 70}, kInt8, -128, 128);
  const Tensor want = naive_matmul(x, w.t()).to(kInt32);
  cpu::GemmArgs g;
  g.dtype = kInt8;
  g.c_dtype = kInt32;
  g.m = 37;
  g.n = 53;
  g.k = 70;
  g.a = linalg::matrix_ref(x);
  g.b = linalg::matrix_ref(w.t());
  for (cpu::GemmImpl impl : {cpu::GemmImpl::OneDnn, cpu::GemmImpl::Kiln}) {
    if (impl == cpu::GemmImpl::OneDnn && !cpu::onednn::has_matmul(kInt8)) continue;
    Tensor c = full({37, 53}, 7, TensorOptions(kInt32));
    g.c = c.data_ptr();
    g.ldc = 53;
    ASSERT_TRUE(cpu::gemm_with(impl, g)) << cpu::to_string(impl);
    EXPECT_TRUE(equal(c, want)) << cpu::to_string(impl);
  }
  EXPECT_TRUE(equal(_int_mm(x, w.t()), want));
  const CacheDir cache;  // max-autotune times the implementations on an int32 scratch output
  auto tuned = compile([](const Tensor& a, const Tensor& b) { return _int_mm(a, b); },
                       CompileOptions().mode("max-autotune"));
  EXPECT_TRUE(equal(tuned(x, w.t()), want));
}

}  // namespace
}  // namespace kiln
