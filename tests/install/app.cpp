// The README's first program, as a user builds it against an installed Kiln.
#include <iostream>

#include "kiln/kiln.h"

int main() {
  kiln::Tensor x = kiln::tensor({1.0, 2.0, 3.0}, kiln::requires_grad());
  kiln::Tensor y = (x * x).sum();
  y.backward();
  std::cout << "y = " << y.item<double>() << "\n";
  std::cout << "dy/dx[2] = " << x.grad().slice(0, 2, 3).item<double>() << "\n";
  return 0;
}
