// Collectives of the Gloo process group, each rank a forked process on loopback, against a
// reference each rank computes alone from every rank's (deterministic) input.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <utility>

#include "kiln/distributed/distributed.h"
#include "kiln/distributed/tcp_store.h"
#include "kiln/kiln.h"
#include "tests/distributed/ranks.h"

namespace kiln::distributed {
namespace {

using namespace std::chrono_literals;
using testing::expect_all_passed;
using testing::input_of;
using testing::Rendezvous;
using testing::require;
using testing::run_ranks;

// A master store in the test process; ranks connect to it as clients.
Tensor combine(const Tensor& a, const Tensor& b, ReduceOp op) {
  const bool is_bool = a.dtype() == kBool;
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
      return is_bool ? a.logical_or(b) : a + b;
    case ReduceOp::PRODUCT:
      return is_bool ? a.logical_and(b) : a * b;
    case ReduceOp::MIN:
      return a.minimum(b);
    case ReduceOp::MAX:
      return a.maximum(b);
    case ReduceOp::BAND:
      return a.bitwise_and(b);
    case ReduceOp::BOR:
      return a.bitwise_or(b);
    case ReduceOp::BXOR:
      return a.bitwise_xor(b);
  }
  return a;
}

Tensor reference(int world, ScalarType dtype, ReduceOp op, int64_t n = 13) {
  Tensor acc = input_of(0, dtype, n);
  for (int r = 1; r < world; ++r) acc = combine(acc, input_of(r, dtype, n), op);
  return op == ReduceOp::AVG ? acc / world : acc;
}

bool defined_for(ScalarType dtype, ReduceOp op) {
  if (op == ReduceOp::AVG) return is_floating_point(dtype);
  if (op == ReduceOp::BAND || op == ReduceOp::BOR || op == ReduceOp::BXOR)
    return !is_floating_point(dtype);
  return true;
}

// all_reduce of n elements on `world` ranks, for each (dtype, op), against the reference.
void expect_large_all_reduces(int world, int64_t n,
                              std::initializer_list<std::pair<ScalarType, ReduceOp>> cases) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(world, [&](int rank) {
    rv.init(rank, world);
    for (auto [dtype, op] : cases) {
      Tensor t = input_of(rank, dtype, n);
      all_reduce(t, op);
      require(t.equal(reference(world, dtype, op, n)), "all_reduce of ", n, " ", dtype, " ",
              reduce_op_name(op), " at ", world, " ranks");
    }
  }));
}

constexpr ScalarType kDtypes[] = {kBool,  kUInt8,   kInt8,     kInt16,   kInt32,
                                  kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};
constexpr ReduceOp kOps[] = {ReduceOp::SUM, ReduceOp::AVG,  ReduceOp::PRODUCT, ReduceOp::MIN,
                             ReduceOp::MAX, ReduceOp::BAND, ReduceOp::BOR,     ReduceOp::BXOR};

void all_reduce_every_dtype_and_op(int world) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(world, [&](int rank) {
    rv.init(rank, world);
    for (ScalarType dtype : kDtypes)
      for (ReduceOp op : kOps) {
        if (!defined_for(dtype, op)) continue;
        Tensor t = input_of(rank, dtype);
        all_reduce(t, op);
        const Tensor want = reference(world, dtype, op);
        require(t.equal(want), "all_reduce ", reduce_op_name(op), " ", dtype, ": got ", t,
                " expected ", want);
      }
  }));
}

TEST(ProcessGroup, AllReduceMatchesTheReferenceForEveryDtypeAndOpOnTwoRanks) {
  all_reduce_every_dtype_and_op(2);
}
TEST(ProcessGroup, AllReduceMatchesTheReferenceForEveryDtypeAndOpOnFourRanks) {
  all_reduce_every_dtype_and_op(4);
}

// Buffers over Gloo's 1 MB segment, with odd element counts at 3 ranks (uneven ring chunks),
// for 4- and 2-byte elements.
TEST(ProcessGroup, LargeTensorsSpanManySegments) {
  expect_large_all_reduces(3, 700'001,
                           {{kFloat32, ReduceOp::SUM},
                            {kFloat32, ReduceOp::MAX},
                            {kBFloat16, ReduceOp::SUM},
                            {kBFloat16, ReduceOp::MAX},
                            {kInt64, ReduceOp::SUM},
                            {kInt64, ReduceOp::MAX}});
}

// Above 1 MB at 4 ranks, all_reduce reduce-scatters and all-gathers pieces of at most 4 MB of
// each rank's chunk: 4.5 M + 3 elements make two pieces a chunk, the last chunk shorter.
TEST(ProcessGroup, LargeAllReducesGoInPiecesAtFourRanks) {
  expect_large_all_reduces(
      4, 4'500'003,
      {{kFloat32, ReduceOp::AVG}, {kInt32, ReduceOp::MAX}, {kFloat64, ReduceOp::SUM}});
}

// Groups of more than 16 ranks take Gloo's ring above the size that travels with the check.
TEST(ProcessGroup, SeventeenRanksReduceThroughTheRing) {
  expect_large_all_reduces(17, 100'001, {{kFloat32, ReduceOp::SUM}});
}

TEST(ProcessGroup, AnUndefinedReductionIsAClearErrorBeforeAnyExchange) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(2, [&](int rank) {
    rv.init(rank, 2);
    Tensor t = input_of(rank, kInt32);
    try {
      all_reduce(t, ReduceOp::AVG);
      require(false, "AVG of int32 did not throw");
    } catch (const Error& e) {
      require(std::string(e.what()).find("AVG is not defined for int32") != std::string::npos,
              "unexpected message: ", e.what());
    }
    all_reduce(t);  // the group still works
    require(t.equal(reference(2, kInt32, ReduceOp::SUM)), "sum after the error");
  }));
}

TEST(ProcessGroup, NonContiguousTensorsAreReducedInPlace) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(2, [&](int rank) {
    rv.init(rank, 2);
    const Tensor base = arange(12, TensorOptions(kFloat32)).view({3, 4}) * (rank + 1);
    const Tensor t = base.t();  // a view with strides (1, 4)
    all_reduce(t);
    const Tensor want = arange(12, TensorOptions(kFloat32)).view({3, 4}) * 3;
    require(base.equal(want), "the base of the reduced view: ", base);
  }));
}

TEST(ProcessGroup, BroadcastReduceAllGatherAndBarrier) {
  const Rendezvous rv;
  constexpr int kWorld = 3;
  expect_all_passed(run_ranks(kWorld, [&](int rank) {
    rv.init(rank, kWorld);
    require(get_rank() == rank && get_world_size() == kWorld, "rank/world size");
    Tensor b = full({5}, rank == 1 ? 7.0 : -1.0, TensorOptions(kFloat64));
    broadcast(b, 1);
    require(b.equal(full({5}, 7.0, TensorOptions(kFloat64))), "broadcast: ", b);

    Tensor r = input_of(rank, kInt64);
    reduce(r, 2, ReduceOp::MAX);
    const Tensor want =
        rank == 2 ? reference(kWorld, kInt64, ReduceOp::MAX) : input_of(rank, kInt64);
    require(r.equal(want), "reduce on rank ", rank, ": ", r);

    const Tensor mine = input_of(rank, kBFloat16, 4).view({2, 2});
    Tensor gathered = empty({kWorld * 2, 2}, TensorOptions(kBFloat16));
    all_gather_into_tensor(gathered, mine);
    std::vector<Tensor> list;
    for (int i = 0; i < kWorld; ++i) list.push_back(empty({2, 2}, TensorOptions(kBFloat16)));
    all_gather(list, mine);
    for (int i = 0; i < kWorld; ++i) {
      const Tensor expected = input_of(i, kBFloat16, 4).view({2, 2});
      require(gathered.slice(0, 2 * i, 2 * i + 2).equal(expected), "all_gather_into_tensor ", i);
      require(list[i].equal(expected), "all_gather list entry ", i);
    }
    barrier();
  }));
}

TEST(ProcessGroup, AsyncWorkCompletesInCallOrder) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(2, [&](int rank) {
    rv.init(rank, 2);
    std::vector<std::shared_ptr<Work>> works;
    std::vector<Tensor> ts;
    for (int i = 0; i < 8; ++i) {
      ts.push_back(full({1000}, rank + i, TensorOptions(kFloat32)));
      works.push_back(all_reduce(ts.back(), ReduceOp::SUM, nullptr, /*async_op=*/true));
    }
    works.back()->wait(std::chrono::seconds(10));
    for (int i = 0; i < 8; ++i) {
      require(works[i]->is_completed() && works[i]->is_success(), "work ", i);
      require(ts[i].equal(full({1000}, 1 + 2 * i, TensorOptions(kFloat32))), "value ", i);
    }
  }));
}

TEST(ProcessGroup, MismatchedTensorsAreAnErrorOnEveryRankNamingThem) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(2, [&](int rank) {
    rv.init(rank, 2);
    Tensor t = zeros({rank == 0 ? 4 : 6});
    try {
      all_reduce(t);
      require(false, "mismatched sizes did not throw");
    } catch (const Error& e) {
      const std::string m = e.what();
      require(m.find("rank 0 all_reduce (SUM) of 4 float32 elements") != std::string::npos &&
                  m.find("rank 1 all_reduce (SUM) of 6 float32 elements") != std::string::npos,
              "unexpected message: ", m);
    }
    Tensor ok = ones({3});
    all_reduce(ok);  // the group is still in step
    require(ok.equal(full({3}, 2.0)), "after the mismatch: ", ok);
  }));
}

// A large all_reduce sends its first pieces beside the agreement check: when the ranks passed
// different things (another size, a small tensor, another collective), each still fails
// clearly, and no piece is left in flight to confuse the calls that follow.
TEST(ProcessGroup, MismatchesOfLargeAllReducesLeaveTheGroupInStep) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(2, [&](int rank) {
    rv.init(rank, 2);
    const std::vector<std::function<void()>> mismatches = {
        [&] { all_reduce(zeros({rank == 0 ? 600'000 : 700'001})); },
        [&] { all_reduce(zeros({rank == 0 ? 10 : 600'000})); },
        [&] {
          all_reduce(zeros({rank == 0 ? 600'000 : 600'000},
                           TensorOptions(rank == 0 ? kFloat32 : kFloat64)));
        },
        [&] {
          Tensor t = zeros({600'000});
          if (rank == 0)
            all_reduce(t);
          else
            broadcast(t, 0);
        }};
    for (size_t i = 0; i < mismatches.size(); ++i) {
      try {
        mismatches[i]();
        require(false, "mismatch ", i, " did not throw");
      } catch (const Error& e) {
        require(std::string(e.what()).find("called different collectives or passed different "
                                           "tensors") != std::string::npos,
                "mismatch ", i, ": unexpected message: ", e.what());
      }
      Tensor small = ones({3}), large = input_of(rank, kFloat32, 700'001);
      all_reduce(small);
      all_reduce(large);
      require(small.equal(full({3}, 2.0)) &&
                  large.equal(reference(2, kFloat32, ReduceOp::SUM, 700'001)),
              "after mismatch ", i);
    }
  }));
}

TEST(ProcessGroup, ADeadRankIsAnErrorWithinTheTimeoutNotAHang) {
  const Rendezvous rv;
  const auto status = run_ranks(2, [&](int rank) {
    rv.init(rank, 2, std::chrono::seconds(2));
    // Rank 1 dies once rank 0 has finished connecting (a death during the rendezvous is a
    // connection error of init_process_group instead).
    TCPStore side("127.0.0.1", rv.port, std::nullopt, false, std::chrono::seconds(20));
    if (rank == 1) {
      side.wait({"rank0_connected"});
      _exit(testing::kExpectedExit);
    }
    side.set("rank0_connected", std::string("1"));
    Tensor t = ones({4});
    const auto start = std::chrono::steady_clock::now();
    try {
      all_reduce(t);
      require(false, "all_reduce with a dead peer did not throw");
    } catch (const Error& e) {
      const auto took = std::chrono::steady_clock::now() - start;
      require(took < std::chrono::seconds(5), "the error took ",
              std::chrono::duration_cast<std::chrono::milliseconds>(took).count(), " ms");
      require(std::string(e.what()).find("all_reduce") != std::string::npos, e.what());
    }
  });
  EXPECT_EQ(status[0], 0);
  EXPECT_EQ(status[1], testing::kExpectedExit);
}

TEST(ProcessGroup, SubgroupsRunTheirOwnCollectives) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(4, [&](int rank) {
    rv.init(rank, 4);
    const Group odd = new_group({1, 3});
    const Group even = new_group({0, 2});
    const Group mine = rank % 2 ? odd : even;
    require((rank % 2 ? even : odd) == nullptr, "a group this rank is not in");
    require(get_rank(mine) == rank / 2 && get_world_size(mine) == 2, "group rank");
    require(get_global_rank(mine, 1) == (rank % 2 ? 3 : 2), "global rank");
    Tensor t = full({2}, rank, TensorOptions(kInt32));
    all_reduce(t, ReduceOp::SUM, mine);
    require(t.equal(full({2}, rank % 2 ? 4 : 2, TensorOptions(kInt32))), "subgroup sum ", t);
    Tensor b = full({1}, rank, TensorOptions(kInt32));
    broadcast(b, rank % 2 ? 3 : 2, mine);  // global source rank
    require(b.item().to_long() == (rank % 2 ? 3 : 2), "subgroup broadcast");
  }));
}

TEST(ProcessGroup, InitMethodsEnvTcpAndFile) {
  // Two free ports, one for env:// and one for tcp:// (rank 0 listens on them): with one port,
  // rank 1 could reach the first store again while rank 0 is still closing it.
  uint16_t env_port = 0, tcp_port = 0;
  {
    TCPStore a("127.0.0.1", 0, std::nullopt, true, std::chrono::seconds(5));
    TCPStore b("127.0.0.1", 0, std::nullopt, true, std::chrono::seconds(5));
    env_port = a.port();
    tcp_port = b.port();
  }
  const std::string file = ::testing::TempDir() + "kiln_init_" + std::to_string(getpid());
  std::remove(file.c_str());
  expect_all_passed(run_ranks(2, [&](int rank) {
    setenv("GLOO_SOCKET_IFNAME", "lo", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", std::to_string(env_port).c_str(), 1);
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", "2", 1);
    for (const std::string& method :
         {std::string("env://"), "tcp://127.0.0.1:" + std::to_string(tcp_port), "file://" + file}) {
      InitOptions o;
      o.init_method = method;
      o.timeout = std::chrono::seconds(20);
      init_process_group(o);
      Tensor t = full({3}, rank + 1.0);
      all_reduce(t);
      require(t.equal(full({3}, 3.0)), method, ": ", t);
      barrier();
      destroy_process_group();
      require(!is_initialized(), method, ": still initialized");
    }
  }));
  std::remove(file.c_str());
}

TEST(ProcessGroup, CallsBeforeInitAndBadOptionsAreClearErrors) {
  EXPECT_FALSE(is_initialized());
  try {
    get_rank();
    FAIL() << "get_rank before init_process_group did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("init_process_group() first"), std::string::npos)
        << e.what();
  }
  InitOptions o;
  o.rank = 0;
  o.world_size = 1;
  o.init_method = "mpi://";
  EXPECT_THROW(init_process_group(o), Error);
  o.init_method = "env://";
  o.backend = "mpi";
  EXPECT_THROW(init_process_group(o), Error);
}

TEST(ProcessGroup, OneRankWorldNeedsNoPeers) {
  setenv("GLOO_SOCKET_IFNAME", "lo", 1);
  InitOptions o;
  o.rank = 0;
  o.world_size = 1;
  o.store = std::make_shared<TCPStore>("127.0.0.1", 0, std::nullopt, true, std::chrono::seconds(5));
  init_process_group(o);
  Tensor t = arange(4, TensorOptions(kFloat32));
  all_reduce(t, ReduceOp::AVG);
  EXPECT_TRUE(t.equal(arange(4, TensorOptions(kFloat32))));
  destroy_process_group();
}

}  // namespace
}  // namespace kiln::distributed
