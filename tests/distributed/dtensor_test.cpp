// DeviceMesh, DTensor placements and redistribute (values and gradients), and the
// tensor-parallel Linear layers against one process holding the whole MLP.
#include <gtest/gtest.h>

#include "tests/distributed/ranks.h"

namespace kiln::distributed {
namespace {

using testing::expect_all_passed;
using testing::Rendezvous;
using testing::require;
using testing::require_error;
using testing::run_ranks;

void on_ranks(int world, const std::function<void(int)>& body) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(world, [&](int rank) {
    rv.init(rank, world);
    body(rank);
  }));
}

// The same values on every rank: 0, 1, 2, ... in float64.
Tensor global(std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return arange(n, TensorOptions(kFloat64)).view(shape);
}

TEST(DeviceMesh, TwoDimensionsGiveRowAndColumnGroups) {
  on_ranks(4, [](int rank) {
    auto mesh = init_device_mesh("cpu", {2, 2}, {"dp", "tp"});
    require(mesh->get_coordinate() == std::vector<int64_t>{rank / 2, rank % 2}, "coordinate");
    Tensor t = full({1}, rank, kInt64);
    all_reduce(t, ReduceOp::SUM, mesh->get_group(mesh->dim_index("tp")));
    require(t.item<int64_t>() == (rank / 2) * 4 + 1, "sum along tp: ", t.item<int64_t>());
    Tensor u = full({1}, rank, kInt64);
    all_reduce(u, ReduceOp::SUM, (*mesh)["dp"]->get_group());
    require(u.item<int64_t>() == 2 + 2 * (rank % 2), "sum along dp: ", u.item<int64_t>());
    require_error([&] { mesh->dim_index("pp"); },
                  {"DeviceMesh: no dimension is named \"pp\"", "\"dp\", \"tp\""});
    require_error([&] { init_device_mesh("cpu", {3}); },
                  {"DeviceMesh: a mesh of shape [3] holds 3 ranks, but the world size is 4"});
  });
}

TEST(DTensor, EveryPlacementRoundTripsOnAnUnevenOneDimensionalMesh) {
  on_ranks(4, [](int rank) {
    auto mesh = init_device_mesh("cpu", {4});
    const Tensor whole = global({6, 5});  // 6 rows over 4 ranks: pieces of 2, 2, 2, 0
    for (int64_t dim : {0, 1}) {
      DTensor d = distribute_tensor(whole, mesh, {Shard(dim)});
      const auto [start, len] = chunk_range(whole.size(dim), 4, rank);
      require(d.to_local().equal(whole.narrow(dim, start, len)), "Shard(", dim, ") piece");
      require(d.full_tensor().equal(whole), "Shard(", dim, ") full_tensor");
      DTensor other = d.redistribute({Shard(1 - dim)});
      require(other.full_tensor().equal(whole), "Shard(", dim, ") -> Shard(", 1 - dim, ")");
      require(d.redistribute({Partial()}).full_tensor().equal(whole), "Shard -> Partial");
    }
    // Partial: the global value is the sum of the ranks' pieces.
    DTensor p = DTensor::from_local(full({2, 3}, rank + 1.0, kFloat64), mesh, {Partial()});
    require(p.full_tensor().equal(full({2, 3}, 10.0, kFloat64)), "Partial -> Replicate");
    DTensor s = p.redistribute({Shard(0)});
    require(s.to_local().equal(rank < 2 ? full({1, 3}, 10.0, kFloat64) : zeros({0, 3}, kFloat64)),
            "Partial -> Shard(0)");
  });
}

TEST(DTensor, RedistributeIsDifferentiable) {
  on_ranks(2, [](int rank) {
    auto mesh = init_device_mesh("cpu", {2});
    const Tensor weights = global({4, 3}) + 1;
    DTensor d = distribute_tensor(global({4, 3}).requires_grad_(), mesh, {Shard(0)});
    require(d.to_local().is_leaf() && d.to_local().requires_grad(), "a leaf that requires grad");
    // Shard -> Replicate forward; the gradient is this rank's rows of the full one.
    (d.full_tensor() * weights).sum().backward();
    require(d.to_local().grad().equal(weights.narrow(0, 2 * rank, 2)), "Shard -> Replicate grad");
    // Partial -> Replicate forward (a sum over ranks); its gradient passes through unchanged.
    Tensor x = full({3}, rank + 1.0, kFloat64).requires_grad_();
    Tensor y = DTensor::from_local(x, mesh, {Partial()}).full_tensor();
    require(y.equal(full({3}, 3.0, kFloat64)), "Partial value");
    (y * y).sum().backward();
    require(x.grad().equal(full({3}, 6.0, kFloat64)), "Partial -> Replicate grad ", x.grad());
  });
}

TEST(DTensor, TwoDimensionalMeshShardsTwoTensorDimensions) {
  on_ranks(4, [](int rank) {
    auto mesh = init_device_mesh("cpu", {2, 2}, {"dp", "tp"});
    const Tensor whole = global({4, 6});
    DTensor d = distribute_tensor(whole, mesh, {Shard(0), Shard(1)});
    require(d.to_local().equal(whole.narrow(0, 2 * (rank / 2), 2).narrow(1, 3 * (rank % 2), 3)),
            "the local block");
    require(d.full_tensor().equal(whole), "full_tensor");
    require(d.redistribute({Replicate(), Shard(0)}).full_tensor().equal(whole),
            "[Shard(0), Shard(1)] -> [Replicate(), Shard(0)]");
    require_error(
        [&] {
          d.redistribute({Shard(0), Shard(0)});
        },
        {"DTensor: tensor dimension 0 is sharded by mesh dimensions 0 and 1"});
  });
}

// A tensor-parallel MLP on 2 ranks equals the same MLP in one process: output, the input's
// gradient and each rank's pieces of the weight gradients.
TEST(TensorParallel, ColumnThenRowLinearMatchesOneProcess) {
  on_ranks(2, [](int rank) {
    auto mesh = init_device_mesh("cpu", {2});
    manual_seed(7);
    nn::Linear fc1(6, 8), fc2(8, 5);
    fc1->to(kFloat64);
    fc2->to(kFloat64);
    nn::parallel::ColumnParallelLinear col(6, 8, mesh);
    nn::parallel::RowParallelLinear row(8, 5, mesh);
    col->to(kFloat64);
    row->to(kFloat64);
    col->load_full(fc1->weight, fc1->bias);
    row->load_full(fc2->weight, fc2->bias);

    manual_seed(8);
    const Tensor x = randn({3, 6}, kFloat64);
    Tensor xp = x.clone().requires_grad_(), xr = x.clone().requires_grad_();
    const Tensor out = row(gelu(col(xp)));
    const Tensor want = fc2(gelu(fc1(xr)));
    require((out - want).abs().max().item<double>() < 1e-12, "output");
    (out * out).sum().backward();
    (want * want).sum().backward();
    require((xp.grad() - xr.grad()).abs().max().item<double>() < 1e-12, "input gradient");
    require((col->weight.grad() - fc1->weight.grad().narrow(0, 4 * rank, 4))
                    .abs()
                    .max()
                    .item<double>() < 1e-12,
            "column weight gradient");
    require((row->weight.grad() - fc2->weight.grad().narrow(1, 4 * rank, 4))
                    .abs()
                    .max()
                    .item<double>() < 1e-12,
            "row weight gradient");
    require((row->bias.grad() - fc2->bias.grad()).abs().max().item<double>() < 1e-12,
            "row bias gradient");
  });
}

}  // namespace
}  // namespace kiln::distributed
