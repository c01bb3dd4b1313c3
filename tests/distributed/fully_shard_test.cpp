// fully_shard: sharded parameters and optimizer state, the same training as DDP, resharding
// around forward, and sharded checkpoints that load at another world size.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/distributed/ranks.h"

namespace kiln::distributed {
namespace {

using nn::parallel::DistributedDataParallel;
using nn::parallel::fully_shard;
using nn::parallel::FullyShardedDataParallel;
using nn::parallel::FullyShardOptions;
using testing::expect_all_passed;
using testing::Rendezvous;
using testing::require;
using testing::run_ranks;

constexpr int64_t kBatch = 8;

// fc1 and fc2 are units of their own; the root unit manages `scale`.
struct NetImpl : nn::Module {
  explicit NetImpl(const FullyShardOptions& options) {
    manual_seed(0);  // DDP's reference starts from the same values
    fc1 = register_module("fc1", fully_shard(nn::Linear(6, 33), options));
    fc2 = register_module("fc2", fully_shard(nn::Linear(33, 3), options));
    scale = register_parameter("scale", ones({3}));
  }
  Tensor forward(const Tensor& x) { return (*fc2)(tanh((*fc1)(x))) * scale; }
  std::shared_ptr<FullyShardedDataParallel<nn::Linear>> fc1, fc2;
  Tensor scale;
};
KILN_MODULE(Net);

// The same model without units, for DDP.
struct PlainImpl : nn::Module {
  PlainImpl() {
    manual_seed(0);
    fc1 = register_module("fc1", nn::Linear(6, 33));
    fc2 = register_module("fc2", nn::Linear(33, 3));
    scale = register_parameter("scale", ones({3}));
  }
  Tensor forward(const Tensor& x) { return fc2(tanh(fc1(x))) * scale; }
  nn::Linear fc1{nullptr}, fc2{nullptr};
  Tensor scale;
};
KILN_MODULE(Plain);

Tensor batch_of(uint64_t seed, int64_t cols, int rank, int world) {
  manual_seed(seed);
  const Tensor all = randn({kBatch, cols});
  return all.narrow(0, rank * (kBatch / world), kBatch / world);
}

template <class Model>
void train(Model& model, nn::Module& params, int rank, int world, int steps) {
  optim::Adam opt(params.parameters(), optim::AdamOptions(0.05));
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    nn::functional::mse_loss(model(batch_of(100 + s, 6, rank, world)),
                             batch_of(200 + s, 3, rank, world))
        .backward();
    opt.step();
  }
}

TEST(FullyShard, TrainsAsDdpDoesWithShardedParametersAndState) {
  for (bool reshard : {true, false}) {
    const Rendezvous rv;
    expect_all_passed(run_ranks(2, [&](int rank) {
      rv.init(rank, 2);
      auto fsdp = fully_shard(Net(FullyShardOptions().reshard_after_forward(reshard)));
      // 33 x 6 = 198 weights: 99 on each rank; 33 biases: 17 and 16.
      const Tensor& w = fsdp->module()->fc1->module()->weight;
      require(w.sizes() == std::vector<int64_t>{99}, "fc1.weight piece ", w.sizes());
      require(fsdp->module()->fc1->module()->bias.numel() == (rank == 0 ? 17 : 16), "fc1.bias");
      require(fsdp->managed_names() == std::vector<std::string>{"scale"}, "root's parameters");
      train(*fsdp, *fsdp, rank, 2, 5);

      Plain plain;
      DistributedDataParallel ddp(plain);
      train(ddp, ddp, rank, 2, 5);
      const auto full = fsdp->full_state_dict();
      for (const auto& item : plain->named_parameters()) {
        const Tensor& got = full.at(item.key());
        require((got - item.value()).abs().max().item<double>() < 1e-6, item.key(),
                " after 5 Adam steps, reshard_after_forward ", reshard, ": ", got, " want ",
                item.value());
      }
      require(fsdp->is_sharded() && fsdp->module()->fc1->is_sharded(), "sharded at rest");
    }));
  }
}

TEST(FullyShard, ParametersAreFreedBetweenForwardAndBackward) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(2, [&](int rank) {
    rv.init(rank, 2);
    auto fsdp = fully_shard(Net(FullyShardOptions()));
    const Tensor out = (*fsdp)(batch_of(1, 6, rank, 2));
    require(fsdp->module()->fc2->is_sharded(), "fc2 still whole after forward");
    const Tensor& w = fsdp->module()->fc2->module()->weight;
    bool whole_in_backward = false;
    w.register_post_accumulate_grad_hook([&](const Tensor& p) {
      whole_in_backward = p.grad().sizes() == std::vector<int64_t>{3, 33};
    });
    out.sum().backward();
    require(whole_in_backward, "fc2's whole gradient in backward");
    require(w.grad().sizes() == std::vector<int64_t>{50 - rank}, "fc2.weight's piece gradient ",
            w.grad().sizes());
  }));
}

TEST(FullyShard, ACheckpointShardedOverFourRanksLoadsOnTwo) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kiln_fsdp_ckpt_" + std::to_string(getpid()));
  const std::string reference = (dir / "reference.safetensors").string();
  {
    const Rendezvous rv;
    expect_all_passed(run_ranks(4, [&](int rank) {
      rv.init(rank, 4);
      auto fsdp = fully_shard(Net(FullyShardOptions()));
      train(*fsdp, *fsdp, rank, 4, 2);
      const auto full = fsdp->full_state_dict();
      fsdp->save_sharded(dir.string());
      if (rank == 0) io::save_safetensors(full, reference);
    }));
  }
  require(std::filesystem::exists(dir / "index.json"), "index.json");
  const Rendezvous rv;
  expect_all_passed(run_ranks(2, [&](int rank) {
    rv.init(rank, 2);
    auto fsdp = fully_shard(Net(FullyShardOptions()));
    fsdp->load_sharded(dir.string());
    const auto want = io::load_safetensors(reference).tensors;
    const auto got = fsdp->full_state_dict();
    for (const auto& [name, value] : want)
      require(got.at(name).equal(value), name, " after loading at world size 2");
  }));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kiln::distributed
