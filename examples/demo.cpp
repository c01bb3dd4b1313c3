// A first Kiln program: fit y = 3x + 2 with autograd (the full demo arrives with kiln::nn).
#include <iostream>

#include "kiln/kiln.h"

int main() {
  auto x = kiln::tensor({0.0, 1.0, 2.0, 3.0, 4.0});
  auto y = x * 3.0 + 2.0;
  auto w = kiln::zeros({1}, kiln::requires_grad());
  auto b = kiln::zeros({1}, kiln::requires_grad());
  for (int step = 0; step < 500; ++step) {
    auto err = x * w + b - y;
    auto loss = (err * err).sum();
    loss.backward();
    {
      kiln::NoGradGuard no_grad;
      w = (w - w.grad() * 0.01).detach();
      b = (b - b.grad() * 0.01).detach();
    }
    w.requires_grad_();
    b.requires_grad_();
    if (step % 100 == 0) std::cout << "step " << step << " loss " << loss.item<double>() << "\n";
  }
  std::cout << "w = " << w.item<double>() << ", b = " << b.item<double>() << "\n";
  return 0;
}
