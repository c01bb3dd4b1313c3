// Post-accumulate-grad hooks and callbacks queued on the engine: the two places DDP hangs on.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/autograd/engine.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

TEST(PostAccumulateGradHook, SeesTheAccumulatedGradientOnceABackward) {
  Tensor w = full({2}, 3.0).requires_grad_();
  std::vector<Tensor> seen;
  w.register_post_accumulate_grad_hook([&](const Tensor& t) { seen.push_back(t.grad().clone()); });
  ((w * w).sum() + w.sum()).backward();  // two uses: one accumulation of 2w + 1
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen[0].equal(full({2}, 7.0)));
  (w * 2.0).sum().backward();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_TRUE(seen[1].equal(full({2}, 9.0)));  // after accumulating into the earlier .grad
}

TEST(PostAccumulateGradHook, NotForAutogradGradNorNonLeaves) {
  Tensor w = ones({2}).requires_grad_();
  int calls = 0;
  w.register_post_accumulate_grad_hook([&](const Tensor&) { ++calls; });
  autograd::grad({(w * 3.0).sum()}, {w});
  EXPECT_EQ(calls, 0);
  Tensor y = w * 2.0;
  try {
    y.register_post_accumulate_grad_hook([](const Tensor&) {});
    FAIL() << "no error for a non-leaf";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("non-leaf"), std::string::npos) << e.what();
  }
}

TEST(QueueCallback, RunsWhenBackwardEndsInOrderAndMayQueueMore) {
  Tensor a = ones({2}).requires_grad_(), b = ones({2}).requires_grad_();
  std::vector<std::string> order;
  a.register_post_accumulate_grad_hook([&](const Tensor&) {
    order.push_back("hook a");
    autograd::queue_callback([&] {
      order.push_back("first");
      autograd::queue_callback([&] { order.push_back("queued by first"); });
    });
    autograd::queue_callback([&] { order.push_back("second"); });
  });
  b.register_post_accumulate_grad_hook([&](const Tensor&) { order.push_back("hook b"); });
  (a * 2.0 + b).sum().backward();
  const std::vector<std::string> want = {"hook a", "hook b", "first", "second", "queued by first"};
  std::vector<std::string> hooks_first = order;
  // The engine may run the two leaves' accumulators in either order; callbacks come after both.
  if (hooks_first[0] == "hook b") std::swap(hooks_first[0], hooks_first[1]);
  EXPECT_EQ(hooks_first, want);
}

TEST(QueueCallback, OutsideBackwardIsAnError) {
  try {
    autograd::queue_callback([] {});
    FAIL() << "no error outside backward";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("queue_callback: no backward pass is running"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kiln
