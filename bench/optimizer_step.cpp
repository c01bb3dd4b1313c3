// Kiln's side of bench/optimizer_step.py: SGD (momentum) and AdamW steps over 8 parameters of
// 2^21 float32 elements on the CPU (the fused ops _fused_sgd_ and _fused_adamw_). Prints
// "name milliseconds-per-step", the mean of 20 steps after 3 warm-up steps.
#include <chrono>
#include <cstdio>

#include "kiln/kiln.h"

using namespace kiln;

int main() {
  std::vector<Tensor> params;
  for (int i = 0; i < 8; ++i) {
    Tensor p = randn({1 << 21}).requires_grad_(true);
    p.mutable_grad() = randn({1 << 21});
    params.push_back(p);
  }
  optim::SGD sgd(params, optim::SGDOptions(0.01).momentum(0.9));
  optim::AdamW adamw(params, optim::AdamWOptions(1e-3));
  for (auto [name, opt] :
       {std::pair<const char*, optim::Optimizer*>{"sgd_momentum", &sgd}, {"adamw", &adamw}}) {
    for (int i = 0; i < 3; ++i) opt->step();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; ++i) opt->step();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s %.3f\n", name, s / 20 * 1e3);
  }
}
