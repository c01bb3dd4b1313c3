// The differentiable collectives on forked ranks: values, inputs left alone, and the gradient
// invariants (world size for all_reduce and all_gather, 1 for reduce_scatter and all_to_all).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/distributed/ranks.h"

namespace kiln::distributed {
namespace {

using testing::expect_all_passed;
using testing::Rendezvous;
using testing::require;
using testing::run_ranks;

constexpr int kWorld = 4;

Tensor leaf(int rank, std::vector<int64_t> shape) {
  Tensor t = (arange(shape[0] * shape[1], TensorOptions(kFloat64)).view(shape) + 10 * rank);
  return t.requires_grad_();
}

// A functional collective returns before its peers have joined it: rank 1 calls only after
// rank 0's calls have returned (were they synchronous, rank 0 would wait for ever), and rank 0's
// first use of each result waits for it. A write to an input waits until the collective has
// read it.
TEST(FunctionalCollectives, ResultsAreWaitedForAtFirstUse) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(2, [&](int rank) {
    rv.init(rank, 2);
    TCPStore store("127.0.0.1", rv.port, std::nullopt, false, std::chrono::seconds(20));
    if (rank == 1) store.wait({"returned"});
    const Tensor x = full({3}, rank + 1.0);
    const Tensor summed = functional::all_reduce(x);
    const Tensor gathered = functional::all_gather_tensor(x);
    if (rank == 0) store.set("returned", std::string("1"));
    x.add_(100.0);  // after the all_gather has read x, whenever that is
    require((summed + 1).equal(full({3}, 4.0)), "all_reduce at first use: ", summed);
    require(gathered.equal(cat({ones({3}), full({3}, 2.0)})), "all_gather: ", gathered);
  }));
}

// A collective that fails fails every use of its result, and the group goes on.
TEST(FunctionalCollectives, AFailedCollectiveFailsEveryUseOfItsResult) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(2, [&](int rank) {
    rv.init(rank, 2);
    const Tensor mismatched = functional::all_reduce(zeros({rank == 0 ? 4 : 6}));
    for (int use = 0; use < 2; ++use) {
      try {
        (void)mismatched.sum();
        require(false, "use ", use, " of a failed all_reduce did not throw");
      } catch (const Error& e) {
        require(std::string(e.what()).find("passed different tensors") != std::string::npos,
                "unexpected message: ", e.what());
      }
    }
    require(functional::all_reduce(ones({3})).equal(full({3}, 2.0)), "the next all_reduce");
  }));
}

TEST(FunctionalCollectives, GradientsFollowTheInvariants) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(kWorld, [&](int rank) {
    rv.init(rank, kWorld);
    const Tensor x = leaf(rank, {4, 2});
    const Tensor before = x.detach().clone();

    const Tensor summed = functional::all_reduce(x);
    Tensor want = zeros({4, 2}, TensorOptions(kFloat64));
    for (int r = 0; r < kWorld; ++r) want = want + leaf(r, {4, 2}).detach();
    require(summed.equal(want), "all_reduce value");
    require(x.detach().equal(before), "all_reduce changed its input");
    summed.sum().backward();
    require(x.grad().equal(full({4, 2}, kWorld, TensorOptions(kFloat64))), "all_reduce grad ",
            x.grad());

    const Tensor g = leaf(rank, {4, 2});
    const Tensor gathered = functional::all_gather_tensor(g, 1);  // [4, 2 * world]
    for (int r = 0; r < kWorld; ++r)
      require(gathered.slice(1, 2 * r, 2 * r + 2).equal(leaf(r, {4, 2}).detach()),
              "all_gather_tensor along dim 1, piece ", r);
    gathered.sum().backward();
    require(g.grad().equal(full({4, 2}, kWorld, TensorOptions(kFloat64))), "all_gather grad ",
            g.grad());

    const Tensor s = leaf(rank, {kWorld * 2, 3});
    const Tensor piece = functional::reduce_scatter_tensor(s, ReduceOp::SUM, 0);  // [2, 3]
    Tensor total = zeros({kWorld * 2, 3}, TensorOptions(kFloat64));
    for (int r = 0; r < kWorld; ++r) total = total + leaf(r, {kWorld * 2, 3}).detach();
    require(piece.equal(total.slice(0, 2 * rank, 2 * rank + 2)), "reduce_scatter value");
    piece.sum().backward();
    require(s.grad().equal(ones({kWorld * 2, 3}, TensorOptions(kFloat64))), "reduce_scatter grad ",
            s.grad());

    // Uneven: rank r sends s + 1 rows to rank s.
    std::vector<int64_t> send, recv;
    for (int p = 0; p < kWorld; ++p) {
      send.push_back(p + 1);
      recv.push_back(rank + 1);
    }
    const Tensor a = leaf(rank, {1 + 2 + 3 + 4, 2});
    const Tensor moved = functional::all_to_all_single(a, recv, send);
    require(moved.size(0) == kWorld * (rank + 1), "all_to_all rows");
    (moved * 3).sum().backward();
    require(a.grad().equal(full({10, 2}, 3, TensorOptions(kFloat64))), "all_to_all grad ",
            a.grad());
  }));
}

TEST(FunctionalCollectives, AveragesAndTheNonDifferentiableReductions) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(2, [&](int rank) {
    rv.init(rank, 2);
    const Tensor x = leaf(rank, {2, 2});
    const Tensor mean = functional::all_reduce(x, ReduceOp::AVG);
    require(mean.equal((leaf(0, {2, 2}) + leaf(1, {2, 2})).detach() / 2), "avg value");
    mean.sum().backward();
    require(x.grad().equal(ones({2, 2}, TensorOptions(kFloat64))), "avg grad ", x.grad());

    const Tensor y = leaf(rank, {2, 2});
    const Tensor biggest = functional::all_reduce(y, ReduceOp::MAX);
    require(biggest.equal(leaf(1, {2, 2}).detach()), "max value");
    try {
      biggest.sum().backward();
      require(false, "the backward of max did not throw");
    } catch (const Error& e) {
      require(std::string(e.what()).find("the backward of reduction max is not defined") !=
                  std::string::npos,
              e.what());
    }
  }));
}

TEST(FunctionalCollectives, RunInsideACompiledFunction) {
  const Rendezvous rv;
  const std::string cache = ::testing::TempDir() + "kiln_fc_cache_" + std::to_string(getpid());
  expect_all_passed(run_ranks(2, [&](int rank) {
    setenv("KILN_CACHE_DIR", cache.c_str(), 1);
    rv.init(rank, 2);
    auto f =
        kiln::compile([](const Tensor& x) { return functional::all_reduce(x * 2).relu() + 1; });
    const Tensor x = full({3, 4}, rank == 0 ? 1.0 : -3.0);
    const Tensor got = f(x);
    require(got.equal(full({3, 4}, 1.0)), "compiled: ", got);  // relu(2 - 6) + 1
    const Tensor again = f(full({3, 4}, 2.0));
    require(again.equal(full({3, 4}, 9.0)), "second call: ", again);  // relu(4 + 4) + 1
  }));
  std::filesystem::remove_all(cache);
}

}  // namespace
}  // namespace kiln::distributed
