// A libtorch-style program built against an installed Kiln through Kiln::compat: autograd, and a
// hand-written kernel with AT_DISPATCH, at::parallel_for, an accessor and an in-place op through
// a const reference.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <iostream>

void add_row_index(const torch::Tensor& t) {
  AT_DISPATCH_FLOATING_TYPES(t.scalar_type(), "add_row_index", [&] {
    auto a = t.accessor<scalar_t, 2>();
    at::parallel_for(0, t.size(0), 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        for (int64_t j = 0; j < t.size(1); ++j) a[i][j] += static_cast<scalar_t>(i);
    });
  });
  t.mul_(2);
}

int main() {
  torch::Tensor x = torch::ones({2, 2}, torch::requires_grad());
  torch::Tensor y = (x * x + x).sum();
  torch::Tensor g = torch::autograd::grad({y}, {x})[0];
  std::cout << "torch y = " << y.item<float>() << ", grad sum = " << g.sum().item<float>() << "\n";
  torch::Tensor k = torch::zeros({4, 3}, torch::kFloat64);
  add_row_index(k);
  std::cout << "kernel sum = " << k.sum().item<double>() << "\n";
  return 0;
}
