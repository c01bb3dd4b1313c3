// Multi-output ops whose backward formulas take undefined gradients (layer_norm's mean and rstd,
// nll_loss's total_weight) get them undefined, not as tensors of zeros: their backward runs no
// op but its own (PyTorch's set_materialize_grads(False)).
#include <gtest/gtest.h>

#include <map>

#include "kiln/core/dispatch.h"
#include "kiln/kiln.h"
#include "kiln/ops/registry.h"

namespace kiln {
namespace {

// Counts the ops called while it is on, by name; "zeros" counts the floating point tensors of
// zeros made by `full` (the backward's seed is ones).
class CountOps final : public DispatchMode {
 public:
  std::map<std::string, int> calls;
  std::vector<Tensor> handle(const OpDef& op, const std::vector<Tensor>& inputs,
                             const Attrs& attrs) override {
    ++calls[op.name];
    std::vector<Tensor> out = call_op(op, inputs, attrs);
    if (op.name == "full" && out[0].is_floating_point() && out[0].abs().sum().item<double>() == 0)
      ++calls["zeros"];
    return out;
  }
};

std::map<std::string, int> ops_of_backward(const Tensor& loss) {
  auto count = std::make_shared<CountOps>();
  ModeGuard on(count);
  loss.backward();
  return count->calls;
}

TEST(MaterializeGrads, LayerNormBackwardRunsOnlyItsFusedOp) {
  Tensor x = randn({4, 8}).requires_grad_(true), w = randn({8}).requires_grad_(true);
  Tensor b = randn({8}).requires_grad_(true);
  const auto calls = ops_of_backward(layer_norm(x, {8}, w, b).sum());
  EXPECT_EQ(calls.count("zeros"), 0u) << "zeros were made for mean and rstd";
  EXPECT_EQ(calls.at("layer_norm_backward"), 1);
  EXPECT_EQ(calls.count("add") + calls.count("sub") + calls.count("mul"), 0u);
  // The gradients are still right: compare with a second, composite formulation.
  Tensor x2 = x.detach().requires_grad_(true);
  const Tensor mean = x2.mean({1}, true);
  const Tensor var = (x2 - mean).pow(2).mean({1}, true);
  (((x2 - mean) / (var + 1e-5).sqrt()) * w.detach() + b.detach()).sum().backward();
  EXPECT_TRUE(allclose(x.grad(), x2.grad(), 1e-4, 1e-5));
}

TEST(MaterializeGrads, CrossEntropyMakesNoZerosForTotalWeight) {
  Tensor x = randn({6, 5}).requires_grad_(true);
  Tensor t = tensor(std::vector<int64_t>{0, 4, 2, 1, 3, 3});
  const auto calls = ops_of_backward(nn::functional::cross_entropy(x, t));
  EXPECT_EQ(calls.count("zeros"), 0u) << "zeros were made for total_weight";
}

}  // namespace
}  // namespace kiln
