// Custom autograd Functions return gradients as libtorch's do: one per forward argument (a
// tensor list's elements one by one), undefined for non-tensor arguments, extra trailing
// undefined ones ignored; anything else is an error naming the function.
#include <gtest/gtest.h>

#include <optional>

#include "kiln/kiln.h"
#include "tests/ops/op_test_util.h"

namespace kiln {
namespace {

using autograd::AutogradContext;
using autograd::variable_list;

// libtorch's documentation example, with its optional bias.
struct LinearFunction : autograd::Function<LinearFunction> {
  static Tensor forward(AutogradContext* ctx, Tensor input, Tensor weight, Tensor bias = Tensor()) {
    ctx->save_for_backward({input, weight, bias});
    Tensor output = input.mm(weight.t());
    if (bias.defined()) output += bias.unsqueeze(0).expand_as(output);
    return output;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    const Tensor &input = saved[0], &weight = saved[1], &bias = saved[2];
    const Tensor& grad_output = grad_outputs[0];
    Tensor grad_input = grad_output.mm(weight);
    Tensor grad_weight = grad_output.t().mm(input);
    Tensor grad_bias;
    if (bias.defined()) grad_bias = grad_output.sum(0);
    return {grad_input, grad_weight, grad_bias};
  }
};

TEST(CustomFunction, LinearFunctionWithoutBiasReturnsATrailingUndefinedGradient) {
  Tensor x = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, kFloat64).requires_grad_();
  Tensor w = tensor({{1.0, 0.0, -1.0}, {2.0, 1.0, 0.5}}, kFloat64).requires_grad_();
  Tensor y = LinearFunction::apply(x, w);
  y.sum().backward();
  // d sum(x w^T) / dx = ones(2,2) w; / dw = ones(2,2)^T x.
  testing::expect_close(x.grad(), tensor({{3.0, 1.0, -0.5}, {3.0, 1.0, -0.5}}, kFloat64),
                        {1e-12, 1e-12}, "grad x");
  testing::expect_close(w.grad(), tensor({{5.0, 7.0, 9.0}, {5.0, 7.0, 9.0}}, kFloat64),
                        {1e-12, 1e-12}, "grad w");
}

TEST(CustomFunction, LinearFunctionWithBias) {
  Tensor x = ones({2, 3}, kFloat64).requires_grad_();
  Tensor w = ones({4, 3}, kFloat64).requires_grad_();
  Tensor b = zeros({4}, kFloat64).requires_grad_();
  LinearFunction::apply(x, w, b).sum().backward();
  testing::expect_close(b.grad(), full({4}, 2.0, kFloat64), {1e-12, 1e-12}, "grad b");
  testing::expect_close(x.grad(), full({2, 3}, 4.0, kFloat64), {1e-12, 1e-12}, "grad x");
}

// Returns `extra` more (undefined, or one defined) gradients than it has arguments.
struct Scale : autograd::Function<Scale> {
  static Tensor forward(AutogradContext* ctx, Tensor x, double factor, int variant) {
    ctx->saved_data["factor"] = factor;
    ctx->saved_data["variant"] = int64_t{variant};
    return x * factor;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const Tensor g = grads[0] * ctx->saved_data["factor"].toDouble();
    switch (ctx->saved_data["variant"].toInt()) {
      case 0:
        return {g, Tensor(), Tensor()};  // one per argument
      case 1:
        return {g, Tensor(), Tensor(), Tensor()};  // extra undefined: ignored
      case 2:
        return {g};  // too few
      case 3:
        return {g, ones({1}), Tensor()};  // defined for a double
      default:
        return {g, Tensor(), Tensor(), ones({1})};  // extra defined
    }
  }
};

TEST(CustomFunction, OneGradientPerArgumentUndefinedForNonTensors) {
  for (int variant : {0, 1}) {
    Tensor x = ones({3}).requires_grad_();
    Scale::apply(x, 3.0, variant).sum().backward();
    EXPECT_EQ(x.grad().sum().item<double>(), 9.0) << variant;
  }
}

TEST(CustomFunction, OtherCountsOrDefinedGradientsForNonTensorsAreErrors) {
  const std::string name = "torch::autograd::CppNode<kiln::(anonymous namespace)::Scale>";
  auto message = [](int variant) {
    Tensor x = ones({3}).requires_grad_();
    return testing::error_message([&] { Scale::apply(x, 3.0, variant).sum().backward(); });
  };
  EXPECT_EQ(message(2), name +
                            ": backward returned an incorrect number of gradients (expected "
                            "3, got 1): one per forward argument, each tensor of a tensor "
                            "list counting as one, and any extra ones undefined");
  EXPECT_EQ(message(3), name +
                            ": backward returned a defined gradient at position 2 (of sizes "
                            "[1]), but forward argument 2 is not a tensor; return an "
                            "undefined Tensor()");
  EXPECT_NE(message(4).find("(expected 3, got 4)"), std::string::npos);
}

// A tensor list counts one slot per tensor; an empty std::optional<Tensor> is not a tensor.
struct WeightedSum : autograd::Function<WeightedSum> {
  static Tensor forward(AutogradContext*, variable_list xs, std::optional<Tensor> unused,
                        double w) {
    (void)unused;
    return (xs[0] + xs[1]) * w;
  }
  static variable_list backward(AutogradContext*, variable_list grads) {
    return {grads[0] * 2.0, grads[0] * 3.0, Tensor(), Tensor()};
  }
};

TEST(CustomFunction, TensorListsCountEachTensor) {
  Tensor a = ones({2}).requires_grad_(), b = ones({2}).requires_grad_();
  WeightedSum::apply(variable_list{a, b}, std::nullopt, 1.0).sum().backward();
  EXPECT_EQ(a.grad().sum().item<double>(), 4.0);
  EXPECT_EQ(b.grad().sum().item<double>(), 6.0);
}

}  // namespace
}  // namespace kiln
