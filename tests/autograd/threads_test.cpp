// Backward passes on several threads over graphs that share leaves (Hogwild training, a server
// answering gradient requests): each finds the leaf's one accumulator, and .grad sums every
// thread's gradient.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {
namespace {

constexpr int kThreads = 4;
constexpr int kPasses = 100;

// Runs body(thread, pass) on kThreads threads; returns how many calls threw.
template <class Body>
int on_threads(const Body& body) {
  std::atomic<int> threw{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPasses; ++i) {
        try {
          body(t, i);
        } catch (const std::exception& e) {
          if (threw++ == 0) ADD_FAILURE() << "thread " << t << ": " << e.what();
        }
      }
    });
  for (auto& t : threads) t.join();
  return threw.load();
}

TEST(AutogradThreads, GradOfASharedLeafFindsItsAccumulator) {
  const Tensor w = randn({8, 8}, TensorOptions(kFloat64)).requires_grad_();
  std::atomic<int> wrong{0};
  EXPECT_EQ(on_threads([&](int t, int i) {
              const Tensor x = full({3, 8}, 0.01 * (t * kPasses + i), TensorOptions(kFloat64));
              const Tensor g = autograd::grad({matmul(x, w).sum()}, {w})[0];
              if (!allclose(g, matmul(x.t(), ones({3, 8}, TensorOptions(kFloat64))))) ++wrong;
            }),
            0);
  EXPECT_EQ(wrong.load(), 0);
}

TEST(AutogradThreads, BackwardOnEveryThreadAccumulatesEveryGradient) {
  const Tensor w = zeros({16}, TensorOptions(kFloat64)).requires_grad_();
  EXPECT_EQ(on_threads([&](int t, int) { (w * static_cast<double>(t + 1)).sum().backward(); }), 0);
  // Each thread adds (t + 1) per pass: kPasses * (1 + 2 + ... + kThreads).
  const double expected = kPasses * kThreads * (kThreads + 1) / 2.0;
  EXPECT_TRUE(allclose(w.grad(), full({16}, expected, TensorOptions(kFloat64)))) << w.grad();
}

}  // namespace
}  // namespace kiln
