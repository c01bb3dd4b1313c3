// Kiln's side of bench/optimizer_step.py: SGD (momentum) and AdamW steps over 8 parameters of
// 2^21 float32 elements, and over 64 parameters of 4096 (a model of many small parameters), on
// the CPU (the fused ops _fused_sgd_ and _fused_adamw_). Prints "name milliseconds-per-step", the
// mean of 20 steps after 3 warm-up steps (200 after 10 for the small parameters).
#include <chrono>
#include <cstdio>

#include "kiln/kiln.h"

using namespace kiln;

void time_steps(const char* suffix, int count, int64_t numel, int steps) {
  std::vector<Tensor> params;
  for (int i = 0; i < count; ++i) {
    Tensor p = randn({numel}).requires_grad_(true);
    p.mutable_grad() = randn({numel});
    params.push_back(p);
  }
  optim::SGD sgd(params, optim::SGDOptions(0.01).momentum(0.9));
  optim::AdamW adamw(params, optim::AdamWOptions(1e-3));
  for (auto [name, opt] :
       {std::pair<const char*, optim::Optimizer*>{"sgd_momentum", &sgd}, {"adamw", &adamw}}) {
    for (int i = 0; i < steps / 10 + 1; ++i) opt->step();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) opt->step();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s%s %.4f\n", name, suffix, s / steps * 1e3);
  }
}

int main() {
  time_steps("", 8, int64_t{1} << 21, 20);
  time_steps("_64_small", 64, 4096, 200);
}
