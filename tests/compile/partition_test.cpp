// The partitioner of training graphs (kiln/compile/partition.h): the forward saves the fewest
// bytes, and the backward recomputes cheap ops from what was saved. Memory is measured with the
// CPU allocator's count of live bytes, so these tests see what a program would hold.
#include <gtest/gtest.h>

#include <vector>

#include "examples/gpt/model.h"
#include "kiln/compile/min_cut.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

TEST(FlowNetwork, TheMinimumCutCrossesTheCheapestEdges) {
  // s -> a (3), s -> b (2), a -> b (5), a -> t (2), b -> t (3): the maximum flow is 5, and the
  // cut {s} | {a, b, t} (3 + 2) is one of the minimum ones; so is {s, a, b} | {t}.
  compiler::FlowNetwork net(4);
  const int s = 0, a = 1, b = 2, t = 3;
  net.add_edge(s, a, 3);
  net.add_edge(s, b, 2);
  net.add_edge(a, b, 5);
  net.add_edge(a, t, 2);
  net.add_edge(b, t, 3);
  EXPECT_EQ(net.max_flow(s, t), 5);
  const std::vector<char> side = net.source_side(s);
  EXPECT_TRUE(side[s]);
  EXPECT_FALSE(side[t]);
}

TEST(FlowNetwork, AChainIsCutAtItsNarrowestEdge) {
  compiler::FlowNetwork net(5);
  net.add_edge(0, 1, compiler::FlowNetwork::kInfinite);
  net.add_edge(1, 2, 7);
  net.add_edge(2, 3, 4);
  net.add_edge(3, 4, 9);
  EXPECT_EQ(net.max_flow(0, 4), 4);
  const std::vector<char> side = net.source_side(0);
  EXPECT_EQ(std::vector<char>(side.begin(), side.end()), (std::vector<char>{1, 1, 1, 0, 0}));
}

// Bytes that stay allocated from before `forward` runs until after: its results and whatever
// its autograd graph keeps for the backward.
template <class F>
int64_t bytes_held_by(F&& forward, Tensor& result) {
  const int64_t before = cpu::memory_allocated();
  result = forward();
  return cpu::memory_allocated() - before;
}

// gelu(x w1 + b1) w2: eager autograd keeps h = x w1 + b1 for gelu's backward and a = gelu(h)
// for the second product's; the compiled forward keeps h alone, and the backward recomputes a.
TEST(Partitioner, AGeluBetweenTwoProductsIsRecomputedNotSaved) {
  manual_seed(0);
  const Tensor x = randn({64, 128}), w1 = randn({128, 512}).requires_grad_(),
               b1 = randn({512}).requires_grad_(), w2 = randn({512, 32}).requires_grad_();
  auto mlp = [](const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2) {
    return gelu(x.matmul(w1) + b1).matmul(w2);
  };
  auto f = compile(mlp);
  Tensor warm = f(x, w1, b1, w2);  // compiles; its graph is dropped with it
  warm = Tensor();
  constexpr int64_t h_bytes = 64 * 512 * 4, y_bytes = 64 * 32 * 4;

  Tensor eager_y, compiled_y;
  const int64_t eager = bytes_held_by([&] { return mlp(x, w1, b1, w2); }, eager_y);
  const int64_t compiled = bytes_held_by([&] { return f(x, w1, b1, w2); }, compiled_y);
  EXPECT_EQ(eager, 2 * h_bytes + y_bytes);
  EXPECT_EQ(compiled, h_bytes + y_bytes);

  eager_y.sum().backward();
  const std::vector<Tensor> want = {w1.grad().clone(), b1.grad().clone(), w2.grad().clone()};
  for (const Tensor& p : {w1, b1, w2}) p.mutable_grad() = Tensor();
  compiled_y.sum().backward();
  EXPECT_TRUE(allclose(w1.grad(), want[0], 1e-4, 1e-4));
  EXPECT_TRUE(allclose(b1.grad(), want[1], 1e-4, 1e-4));
  EXPECT_TRUE(allclose(w2.grad(), want[2], 1e-4, 1e-4));
}

// The check: a GPT block's compiled forward keeps fewer bytes for its backward than
// eager autograd does, the step's peak (forward and backward) is no higher, and the gradients
// match.
TEST(Partitioner, AGptBlockSavesFewerBytesThanEagerAutograd) {
  gpt::Config c;
  c.vocab_size = 16;
  c.block_size = 64;
  c.n_head = 4;
  c.n_embd = 64;
  manual_seed(3);
  gpt::Block block(c);
  const Tensor x = randn({8, 64, 64}).requires_grad_(), dy = randn({8, 64, 64});
  auto f = compile(block);
  f(x).backward(dy);  // compiles
  struct Step {
    int64_t held, peak;
    std::vector<Tensor> grads;
  };
  auto step = [&](auto forward) {
    x.mutable_grad() = Tensor();
    block->zero_grad();
    const int64_t before = cpu::memory_allocated();
    cpu::reset_peak_memory_stats();
    Tensor y = forward();
    const int64_t held = cpu::memory_allocated() - before;
    y.backward(dy);
    y = Tensor();
    Step s{held, cpu::max_memory_allocated() - before, {x.grad().clone()}};
    for (const Tensor& p : block->parameters()) s.grads.push_back(p.grad().clone());
    return s;
  };
  const Step eager = step([&] { return block->forward(x); });
  const Step compiled = step([&] { return f(x); });
  const int64_t activation = 8 * 64 * 64 * 4;
  EXPECT_LT(compiled.held, eager.held - 4 * activation)
      << "eager " << eager.held << ", compiled " << compiled.held;
  EXPECT_LE(compiled.peak, eager.peak);
  for (size_t i = 0; i < eager.grads.size(); ++i)
    EXPECT_TRUE(allclose(compiled.grads[i], eager.grads[i], 1e-4, 1e-4)) << i;
}

// With retain_graph, the compiled backward keeps what the forward saved and runs again.
TEST(Partitioner, RetainGraphKeepsTheSavedValuesForASecondBackward) {
  manual_seed(4);
  const Tensor x = randn({16, 32}).requires_grad_(), w = randn({32, 32}).requires_grad_();
  auto f = compile([](const Tensor& x, const Tensor& w) { return tanh(x.matmul(w)).matmul(w); });
  const Tensor y = f(x, w);
  y.sum().backward({}, /*retain_graph=*/true);
  const Tensor first = w.grad().clone();
  y.sum().backward();
  EXPECT_TRUE(allclose(w.grad(), 2 * first, 1e-5, 1e-5));
  EXPECT_THROW(y.sum().backward(), Error);  // freed after the second
}

}  // namespace
}  // namespace kiln
