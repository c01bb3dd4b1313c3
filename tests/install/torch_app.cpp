// A libtorch-style program built against an installed Kiln through Kiln::compat.
#include <torch/torch.h>

#include <iostream>

int main() {
  torch::Tensor x = torch::ones({2, 2}, torch::requires_grad());
  torch::Tensor y = (x * x + x).sum();
  torch::Tensor g = torch::autograd::grad({y}, {x})[0];
  std::cout << "torch y = " << y.item<float>() << ", grad sum = " << g.sum().item<float>() << "\n";
  return 0;
}
