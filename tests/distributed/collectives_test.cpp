// gather, scatter, reduce_scatter and all_to_all on forked ranks, against each rank's own
// reference built from every rank's (deterministic) input.
#include <gtest/gtest.h>

#include "tests/distributed/ranks.h"

namespace kiln::distributed {
namespace {

using testing::expect_all_passed;
using testing::input_of;
using testing::Rendezvous;
using testing::require;
using testing::run_ranks;

// Rank r's block for rank s: distinct values per (r, s).
Tensor block(int from, int to, int64_t rows, ScalarType dtype = kFloat32) {
  return (arange(rows * 3, TensorOptions(kInt64)).view({rows, 3}) + 100 * from + 10 * to).to(dtype);
}

TEST(Collectives, GatherAndScatterGoThroughTheRoot) {
  const Rendezvous rv;
  constexpr int kWorld = 3;
  expect_all_passed(run_ranks(kWorld, [&](int rank) {
    rv.init(rank, kWorld);
    std::vector<Tensor> gathered;
    if (rank == 2)
      for (int r = 0; r < kWorld; ++r) gathered.push_back(empty({13}, TensorOptions(kInt16)));
    gather(input_of(rank, kInt16), gathered, 2);
    if (rank == 2)
      for (int r = 0; r < kWorld; ++r)
        require(gathered[r].equal(input_of(r, kInt16)), "gather entry ", r);

    std::vector<Tensor> pieces;
    if (rank == 0)
      for (int r = 0; r < kWorld; ++r) pieces.push_back(block(0, r, 2).t());  // non-contiguous
    Tensor mine = empty({3, 2});
    scatter(mine, pieces, 0);
    require(mine.equal(block(0, rank, 2).t()), "scatter on rank ", rank, ": ", mine);
  }));
}

TEST(Collectives, ReduceScatterKeepsEachRanksPieceOfTheReduction) {
  const Rendezvous rv;
  constexpr int kWorld = 4;
  expect_all_passed(run_ranks(kWorld, [&](int rank) {
    rv.init(rank, kWorld);
    // Rank r contributes block(r, s) for each s; rank s gets the sum over r of block(r, s).
    std::vector<Tensor> inputs;
    for (int s = 0; s < kWorld; ++s) inputs.push_back(block(rank, s, 2));
    Tensor want = zeros({2, 3});
    for (int r = 0; r < kWorld; ++r) want = want + block(r, rank, 2);

    Tensor out = empty({2, 3});
    reduce_scatter(out, inputs);
    require(out.equal(want), "reduce_scatter: ", out);

    Tensor out2 = empty({2, 3});
    reduce_scatter_tensor(out2, cat(inputs), ReduceOp::AVG);
    require(out2.allclose(want / kWorld), "reduce_scatter_tensor AVG: ", out2);
  }));
}

TEST(Collectives, AllToAllSingleWithEvenAndUnevenSplits) {
  const Rendezvous rv;
  constexpr int kWorld = 3;
  expect_all_passed(run_ranks(kWorld, [&](int rank) {
    rv.init(rank, kWorld);
    // Even: 2 rows to each rank.
    std::vector<Tensor> mine;
    for (int s = 0; s < kWorld; ++s) mine.push_back(block(rank, s, 2, kBFloat16));
    Tensor out = empty({6, 3}, TensorOptions(kBFloat16));
    all_to_all_single(out, cat(mine));
    for (int r = 0; r < kWorld; ++r)
      require(out.slice(0, 2 * r, 2 * r + 2).equal(block(r, rank, 2, kBFloat16)), "even from ", r);

    // Uneven: rank r sends r + s + 1 rows to rank s (none when that is 3 or more... kept small).
    auto rows = [](int from, int to) { return int64_t((from + 2 * to) % 3); };
    std::vector<int64_t> send, recv;
    std::vector<Tensor> parts, expected;
    for (int s = 0; s < kWorld; ++s) {
      send.push_back(rows(rank, s));
      recv.push_back(rows(s, rank));
      parts.push_back(block(rank, s, rows(rank, s)));
      expected.push_back(block(s, rank, rows(s, rank)));
    }
    const Tensor want = cat(expected);
    Tensor got = full({want.size(0), 3}, -1.0);
    all_to_all_single(got, cat(parts), recv, send);
    require(got.equal(want), "uneven: ", got, " expected ", want);

    std::vector<Tensor> outs;
    for (int r = 0; r < kWorld; ++r) outs.push_back(empty({rows(r, rank), 3}));
    all_to_all(outs, parts);
    for (int r = 0; r < kWorld; ++r) require(outs[r].equal(expected[r]), "all_to_all from ", r);
  }));
}

TEST(Collectives, AllToAllSplitsThatDisagreeAreAnErrorOnEveryRank) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(2, [&](int rank) {
    rv.init(rank, 2);
    // Rank 0 sends 1 row to rank 1, but rank 1 expects 2 from it.
    const std::vector<int64_t> send =
        rank == 0 ? std::vector<int64_t>{1, 1} : std::vector<int64_t>{1, 1};
    const std::vector<int64_t> recv =
        rank == 0 ? std::vector<int64_t>{1, 1} : std::vector<int64_t>{2, 1};
    Tensor out = empty({recv[0] + recv[1], 3});
    try {
      all_to_all_single(out, zeros({2, 3}), recv, send);
      require(false, "mismatched splits did not throw");
    } catch (const Error& e) {
      require(std::string(e.what()).find("rank 0 sends 3 elements to rank 1, which expects 6") !=
                  std::string::npos,
              "unexpected message: ", e.what());
    }
    barrier();
  }));
}

TEST(Collectives, ArgumentErrorsNameTheCollective) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(2, [&](int rank) {
    rv.init(rank, 2);
    auto expect_error = [](const char* what, const std::function<void()>& f) {
      try {
        f();
      } catch (const Error& e) {
        require(std::string(e.what()).rfind(what, 0) == 0, "message does not start with ", what,
                ": ", e.what());
        return;
      }
      require(false, what, " did not throw");
    };
    expect_error("all_gather_into_tensor", [] { all_gather_into_tensor(zeros({3}), zeros({2})); });
    expect_error("reduce_scatter_tensor", [] { reduce_scatter_tensor(zeros({2}), zeros({3})); });
    expect_error("gather", [&] { gather(zeros({2}), {zeros({2})}, 1 - rank); });
    expect_error("broadcast", [] { broadcast(zeros({2}), 5); });
    expect_error("all_to_all_single", [] { all_to_all_single(zeros({3, 1}), zeros({3, 1})); });
    barrier();
  }));
}

}  // namespace
}  // namespace kiln::distributed
