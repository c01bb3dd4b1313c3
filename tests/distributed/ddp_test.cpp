// DistributedDataParallel on forked ranks, against one process that trains on the whole batch.
#include <gtest/gtest.h>

#include "tests/distributed/ranks.h"

namespace kiln::distributed {
namespace {

using nn::parallel::DistributedDataParallel;
using nn::parallel::DistributedDataParallelOptions;
using testing::expect_all_passed;
using testing::Rendezvous;
using testing::require;
using testing::require_error;
using testing::run_ranks;

constexpr int kWorld = 2;

// Runs body(rank) on each of kWorld ranks of an initialized default group.
void on_ranks(const std::function<void(int)>& body) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(kWorld, [&](int rank) {
    rv.init(rank, kWorld);
    body(rank);
  }));
}
constexpr int64_t kBatch = 8;

// Parameters in order: fc1.weight, fc1.bias, fc2.weight, fc2.bias, then the heads'.
struct NetImpl : nn::Module {
  explicit NetImpl(uint64_t seed, bool heads = true) {
    manual_seed(seed);
    fc1 = register_module("fc1", nn::Linear(6, 32));
    fc2 = register_module("fc2", nn::Linear(32, 3));
    if (!heads) return;
    head_b = register_module("head_b", nn::Linear(3, 3));
    never = register_module("never", nn::Linear(3, 3));
  }
  // head_b takes part only when use_b is set; `never` never does.
  Tensor forward(const Tensor& x, bool use_b = false) {
    Tensor h = fc2(tanh(fc1(x)));
    return use_b ? h + head_b(h) : h;
  }
  nn::Linear fc1{nullptr}, fc2{nullptr}, head_b{nullptr}, never{nullptr};
};
KILN_MODULE(Net);

Tensor inputs() {
  manual_seed(100);
  return randn({kBatch, 6});
}
Tensor targets() {
  manual_seed(101);
  return randn({kBatch, 3});
}
Tensor rows_of(const Tensor& t, int rank) {
  const int64_t n = t.size(0) / kWorld;
  return t.narrow(0, rank * n, n);
}

bool close(const Tensor& a, const Tensor& b, double atol = 1e-6) {
  return a.defined() && b.defined() && (a - b).abs().max().item<double>() <= atol;
}

// Steps of SGD with momentum on the whole batch in this process.
std::vector<Tensor> reference_parameters(int steps, bool heads) {
  Net ref(uint64_t{0}, heads);
  optim::SGD opt(ref->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    nn::functional::mse_loss(ref->forward(inputs()), targets()).backward();
    opt.step();
  }
  return ref->parameters();
}

void expect_ddp_matches_one_process(const DistributedDataParallelOptions& options,
                                    bool heads = true) {
  on_ranks([&](int rank) {
    // Different initial values: DDP starts every rank from rank 0's.
    Net local(static_cast<uint64_t>(rank), heads);
    DistributedDataParallel ddp(local, options);
    optim::SGD opt(ddp.parameters(), optim::SGDOptions(0.1).momentum(0.9));
    for (int s = 0; s < 5; ++s) {
      opt.zero_grad();
      const Tensor out = ddp(rows_of(inputs(), rank));
      nn::functional::mse_loss(out, rows_of(targets(), rank)).backward();
      opt.step();
    }
    const std::vector<Tensor> want = reference_parameters(5, heads);
    const std::vector<Tensor> got = local->parameters();
    for (size_t i = 0; i < want.size(); ++i)
      require(close(got[i], want[i]), "parameter ", i, " after 5 steps: ", got[i], " want ",
              want[i]);
    require(ddp.reducer().iteration() == 5, "iterations ", ddp.reducer().iteration());
    const bool shared = got[0].grad().impl()->storage() == got[1].grad().impl()->storage();
    require(shared == options.gradient_as_bucket_view(),
            "gradients are views into one bucket: ", shared);
  });
}

TEST(DistributedDataParallel, TwoRanksMatchOneProcessOnTheWholeBatch) {
  expect_ddp_matches_one_process(DistributedDataParallelOptions(), /*heads=*/false);
}

TEST(DistributedDataParallel, FindUnusedParametersMatchesOneProcess) {
  expect_ddp_matches_one_process(DistributedDataParallelOptions().find_unused_parameters(true));
}

TEST(DistributedDataParallel, ManySmallBucketsMatchOneProcess) {
  // 500 bytes a bucket: several buckets, reduced while backward still runs.
  expect_ddp_matches_one_process(DistributedDataParallelOptions()
                                     .bucket_cap_mb(500.0 / (1 << 20))
                                     .find_unused_parameters(true));
}

TEST(DistributedDataParallel, GradientAsBucketViewAndStaticGraphMatchOneProcess) {
  expect_ddp_matches_one_process(
      DistributedDataParallelOptions().gradient_as_bucket_view(true).static_graph(true));
}

TEST(DistributedDataParallel, BucketsFollowTheArrivalOrderAfterTheFirstStep) {
  on_ranks([&](int rank) {
    Net local(uint64_t{0});
    DistributedDataParallel ddp(
        local, DistributedDataParallelOptions().bucket_cap_mb(1e-6).static_graph(true));
    const size_t before = ddp.reducer().bucket_indices().size();
    require(before == 8, "one bucket per parameter, got ", before);
    ddp(rows_of(inputs(), rank)).sum().backward();
    // fc2's gradients arrive first, then fc1's; the unused heads go last.
    const auto buckets = ddp.reducer().bucket_indices();
    const std::vector<size_t> first = {buckets[0][0], buckets[1][0], buckets[2][0], buckets[3][0]};
    require((first[0] == 2 || first[0] == 3) && (first[2] == 0 || first[2] == 1),
            "bucket order after the first step: ", first[0], " ", first[1], " ", first[2], " ",
            first[3]);
    require(!local->never->weight.grad().defined(), "a parameter no rank used got a gradient");
  });
}

TEST(DistributedDataParallel, NoSyncAccumulatesAndTheNextBackwardReducesTheSum) {
  on_ranks([&](int rank) {
    Net local(uint64_t{0});
    DistributedDataParallel ddp(local,
                                DistributedDataParallelOptions().find_unused_parameters(true));
    const Tensor x = rows_of(inputs(), rank), y = rows_of(targets(), rank);
    {
      auto guard = ddp.no_sync();
      nn::functional::mse_loss(ddp(x.narrow(0, 0, 2)), y.narrow(0, 0, 2)).backward();
    }
    Net alone(uint64_t{0});
    nn::functional::mse_loss(alone->forward(x.narrow(0, 0, 2)), y.narrow(0, 0, 2)).backward();
    require(close(local->fc1->weight.grad(), alone->fc1->weight.grad()),
            "no_sync reduced the gradient");
    nn::functional::mse_loss(ddp(x.narrow(0, 2, 2)), y.narrow(0, 2, 2)).backward();

    // One process: the four micro-batch losses summed, over the two ranks' average.
    Net ref(uint64_t{0});
    Tensor loss = zeros({});
    for (int k = 0; k < 4; ++k)
      loss = loss + nn::functional::mse_loss(ref->forward(inputs().narrow(0, 2 * k, 2)),
                                             targets().narrow(0, 2 * k, 2));
    (loss / kWorld).backward();
    require(close(local->fc1->weight.grad(), ref->fc1->weight.grad()), "accumulated gradient");
  });
}

TEST(DistributedDataParallel, ParametersOneRankSkippedGetTheOtherRanksGradient) {
  on_ranks([&](int rank) {
    Net local(uint64_t{0});
    DistributedDataParallel ddp(local,
                                DistributedDataParallelOptions().find_unused_parameters(true));
    for (int step = 0; step < 2; ++step) {
      ddp.zero_grad();
      ddp(rows_of(inputs(), rank), /*use_b=*/rank == 1).sum().backward();
      Net ref(uint64_t{0});
      ref->forward(rows_of(inputs(), 1), true).sum().backward();
      require(close(local->head_b->weight.grad(), ref->head_b->weight.grad() / kWorld),
              "head_b's gradient on rank ", rank, " step ", step);
      require(!local->never->weight.grad().defined(), "a parameter no rank used got a gradient");
    }
  });
}

TEST(DistributedDataParallel, AnUnusedParameterIsAClearErrorWithoutFindUnused) {
  on_ranks([&](int rank) {
    Net local(uint64_t{0});
    DistributedDataParallel ddp(local);
    require_error([&] { ddp(rows_of(inputs(), rank)).sum().backward(); },
                  {"'head_b.weight'", "'never.bias'", "find_unused_parameters(true)"});
  });
}

TEST(DistributedDataParallel, RanksWithDifferentModelsAreAClearError) {
  on_ranks([&](int rank) {
    nn::Linear local(6, rank == 0 ? 3 : 4);
    require_error([&] { DistributedDataParallel ddp(local); },
                  {"DistributedDataParallel: the parameters differ across ranks: rank(s) 1"});
  });
}

TEST(DistributedDataParallel, BuffersComeFromRankZeroAtEveryForward) {
  on_ranks([&](int rank) {
    nn::Sequential local(nn::Linear(6, 4), nn::BatchNorm1d(4));
    DistributedDataParallel ddp(local.ptr());
    const Tensor mean = local->named_buffers()["1.running_mean"];
    require(mean.equal(zeros({4})), "initial running_mean");
    mean.fill_(rank + 1.0);  // the ranks drift apart
    ddp.eval();
    NoGradGuard no_grad;
    ddp(rows_of(inputs(), rank));
    require(mean.equal(full({4}, 1.0)), "running_mean after a forward: ", mean);
  });
}

}  // namespace
}  // namespace kiln::distributed
