// A custom autograd Function, as in libtorch's autograd tutorial: LinearFunction with an optional
// bias, checked against the same computation recorded by autograd.
#include <torch/torch.h>

using namespace torch::autograd;

class LinearFunction : public Function<LinearFunction> {
 public:
  // bias is an optional argument.
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor input, torch::Tensor weight,
                               torch::Tensor bias = torch::Tensor()) {
    ctx->save_for_backward({input, weight, bias});
    auto output = input.mm(weight.t());
    if (bias.defined()) {
      output += bias.unsqueeze(0).expand_as(output);
    }
    return output;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    auto input = saved[0];
    auto weight = saved[1];
    auto bias = saved[2];

    auto grad_output = grad_outputs[0];
    auto grad_input = grad_output.mm(weight);
    auto grad_weight = grad_output.t().mm(input);
    auto grad_bias = torch::Tensor();
    if (bias.defined()) {
      grad_bias = grad_output.sum(0);
    }
    return {grad_input, grad_weight, grad_bias};
  }
};

bool close(const torch::Tensor& a, const torch::Tensor& b) {
  return torch::allclose(a, b, 1e-5, 1e-6);
}

int main() {
  torch::manual_seed(6);
  auto x = torch::randn({2, 3}).requires_grad_();
  auto weight = torch::randn({4, 3}).requires_grad_();
  auto bias = torch::randn(4).requires_grad_();
  auto y = LinearFunction::apply(x, weight, bias);
  y.sum().backward();

  auto x2 = x.detach().clone().requires_grad_();
  auto w2 = weight.detach().clone().requires_grad_();
  auto b2 = bias.detach().clone().requires_grad_();
  auto y2 = torch::nn::functional::linear(x2, w2, b2);
  y2.sum().backward();

  // Without a bias the third gradient is undefined.
  auto x3 = x.detach().clone().requires_grad_();
  auto y3 = LinearFunction::apply(x3, weight.detach());
  y3.sum().backward();

  std::cout << x.grad() << std::endl << weight.grad() << std::endl;
  const bool ok = close(y, y2) && close(x.grad(), x2.grad()) && close(weight.grad(), w2.grad()) &&
                  close(bias.grad(), b2.grad()) && close(x3.grad(), x2.grad());
  return ok ? 0 : 1;
}
