// grad_fn names are libtorch's: CamelCase of the ATen op + "Backward" + the overload index in
// derivatives.yaml (C++ number operands pick the Scalar overloads). The expected names are what
// PyTorch 2 reports for the same calls (/opt/ref, torch.ops.aten.<op>.<overload>).
#include <gtest/gtest.h>

#include <functional>

#include "kiln/autograd/node_name.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

TEST(NodeName, CamelCaseAsPyTorchsGenerator) {
  EXPECT_EQ(autograd::camel_case("add"), "Add");
  EXPECT_EQ(autograd::camel_case("native_batch_norm"), "NativeBatchNorm");
  EXPECT_EQ(autograd::camel_case("max_pool2d_with_indices"), "MaxPool2DWithIndices");
  EXPECT_EQ(autograd::camel_case("_to_copy"), "ToCopy");
  EXPECT_EQ(autograd::camel_case("linalg_vector_norm"), "LinalgVectorNorm");
}

struct Case {
  const char* what;
  std::function<Tensor(const Tensor& a, const Tensor& b)> expr;
  const char* name;
};

TEST(NodeName, MatchesLibtorch) {
  Tensor a = randn({2, 3}, kFloat64).requires_grad_();
  Tensor b = randn({2, 3}, kFloat64).requires_grad_();
  const std::vector<Case> cases = {
      {"a + b", [](auto& a, auto& b) { return a + b; }, "AddBackward0"},
      {"a + 1", [](auto& a, auto&) { return a + 1; }, "AddBackward1"},
      {"a - b", [](auto& a, auto& b) { return a - b; }, "SubBackward0"},
      {"a - 1", [](auto& a, auto&) { return a - 1; }, "SubBackward1"},
      {"a * b", [](auto& a, auto& b) { return a * b; }, "MulBackward0"},
      {"a * 2", [](auto& a, auto&) { return a * 2; }, "MulBackward1"},
      {"a / b", [](auto& a, auto& b) { return a / b; }, "DivBackward0"},
      {"a / 2", [](auto& a, auto&) { return a / 2; }, "DivBackward1"},
      {"-a", [](auto& a, auto&) { return -a; }, "NegBackward0"},
      {"mm", [](auto& a, auto& b) { return a.mm(b.t()); }, "MmBackward0"},
      {"sum()", [](auto& a, auto&) { return a.sum(); }, "SumBackward0"},
      {"sum(1)", [](auto& a, auto&) { return a.sum(std::vector<int64_t>{1}); }, "SumBackward1"},
      {"mean()", [](auto& a, auto&) { return a.mean(); }, "MeanBackward0"},
      {"mean(1)", [](auto& a, auto&) { return a.mean(std::vector<int64_t>{1}); }, "MeanBackward1"},
      {"pow(2)", [](auto& a, auto&) { return a.pow(2); }, "PowBackward0"},
      {"pow(b)", [](auto& a, auto& b) { return a.abs().pow(b); }, "PowBackward1"},
      {"exp", [](auto& a, auto&) { return a.exp(); }, "ExpBackward0"},
      {"relu", [](auto& a, auto&) { return a.relu(); }, "ReluBackward0"},
      {"sigmoid", [](auto& a, auto&) { return a.sigmoid(); }, "SigmoidBackward0"},
      {"tanh", [](auto& a, auto&) { return a.tanh(); }, "TanhBackward0"},
      {"abs", [](auto& a, auto&) { return a.abs(); }, "AbsBackward0"},
      {"clamp(0)", [](auto& a, auto&) { return a.clamp(Scalar(0)); }, "ClampBackward1"},
      {"view", [](auto& a, auto&) { return a.view({6}); }, "ViewBackward0"},
      {"permute",
       [](auto& a, auto&) {
         return a.permute({1, 0});
       },
       "PermuteBackward0"},
      {"unsqueeze", [](auto& a, auto&) { return a.unsqueeze(0); }, "UnsqueezeBackward0"},
      {"select", [](auto& a, auto&) { return a.select(0, 1); }, "SelectBackward0"},
      {"expand",
       [](auto& a, auto&) {
         return a.expand({2, 2, 3});
       },
       "ExpandBackward0"},
      {"cat",
       [](auto& a, auto& b) {
         return cat({a, b});
       },
       "CatBackward0"},
      {"softmax", [](auto& a, auto&) { return softmax(a, 1); }, "SoftmaxBackward0"},
      {"log_softmax", [](auto& a, auto&) { return log_softmax(a, 1); }, "LogSoftmaxBackward0"},
      {"max()", [](auto& a, auto&) { return a.max(); }, "MaxBackward1"},
      {"max(1)", [](auto& a, auto&) { return std::get<0>(a.max(1)); }, "MaxBackward0"},
      {"clone", [](auto& a, auto&) { return a.clone(); }, "CloneBackward0"},
      {"to(float)", [](auto& a, auto&) { return a.to(kFloat32); }, "ToCopyBackward0"},
      {"var", [](auto& a, auto&) { return a.var(); }, "VarBackward0"},
      {"prod", [](auto& a, auto&) { return a.prod(); }, "ProdBackward0"},
      {"gather",
       [](auto& a, auto&) {
         return a.gather(1, zeros({2, 1}, kInt64));
       },
       "GatherBackward0"},
      {"where", [](auto& a, auto& b) { return where(a > 0, a, b); }, "WhereBackward0"},
      {"layer_norm", [](auto& a, auto&) { return layer_norm(a, {3}); }, "NativeLayerNormBackward0"},
      {"mul_ on a non-leaf", [](auto& a, auto&) { return (a + 0).mul_(2); }, "MulBackward1"},
  };
  for (const Case& c : cases) {
    Tensor y = c.expr(a, b);
    ASSERT_TRUE(y.grad_fn()) << c.what;
    EXPECT_EQ(y.grad_fn()->name(), c.name) << c.what;
  }
}

TEST(NodeName, NetworkLayers) {
  Tensor x = randn({1, 2, 4, 4}, kFloat64).requires_grad_();
  Tensor w = randn({2, 2, 3, 3}, kFloat64);
  EXPECT_EQ(conv2d(x, w).grad_fn()->name(), "ConvolutionBackward0");
  EXPECT_EQ(max_pool2d(x, {2, 2}).grad_fn()->name(), "MaxPool2DWithIndicesBackward0");
  Tensor mean = zeros({2}, kFloat64), var = ones({2}, kFloat64);
  EXPECT_EQ(batch_norm(x, {}, {}, mean, var, true, 0.1, 1e-5).grad_fn()->name(),
            "NativeBatchNormBackward0");
  Tensor table = randn({5, 3}, kFloat64).requires_grad_();
  EXPECT_EQ(embedding(table, tensor({1, 2}, kInt64)).grad_fn()->name(), "EmbeddingBackward0");
}

TEST(NodeName, LeavesAccumulateInAccumulateGrad) {
  Tensor a = ones({2}).requires_grad_();
  Tensor y = a * 2;
  ASSERT_TRUE(y.grad_fn()->next_functions().at(0).valid());
  EXPECT_EQ(y.grad_fn()->next_functions()[0].node->name(), "torch::autograd::AccumulateGrad");
}

}  // namespace
}  // namespace kiln
