// send/recv between forked ranks: ordering by tag and peer, any-source receives, batches.
#include <gtest/gtest.h>

#include "tests/distributed/ranks.h"

namespace kiln::distributed {
namespace {

using testing::expect_all_passed;
using testing::Rendezvous;
using testing::require;
using testing::run_ranks;

TEST(PointToPoint, SendAndRecvInEitherOrderWithoutDeadlock) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(2, [&](int rank) {
    rv.init(rank, 2);
    const int peer = 1 - rank;
    // Both ranks post their send first, then receive (a blocking send on both would wait for
    // the other's recv, as with PyTorch's Gloo groups).
    Tensor out = full({1000}, rank + 1.0);
    auto sent = isend(out, peer);
    out.fill_(-1);  // the send took its copy when posted
    Tensor in = empty({1000});
    require(recv(in, peer) == peer, "source rank");
    require(in.equal(full({1000}, peer + 1.0)), "payload");
    sent->wait();
    // Blocking calls in matching order.
    if (rank == 0) {
      send(full({5}, 11.0), 1);
    } else {
      Tensor t = empty({5});
      recv(t, 0);
      require(t.equal(full({5}, 11.0)), "blocking send/recv");
    }
    // Tags keep messages apart: rank 0 sends tag 7 then tag 3; rank 1 receives 3 first.
    if (rank == 0) {
      auto a = isend(full({2}, 7.0), 1, nullptr, 7);
      auto b = isend(full({2}, 3.0), 1, nullptr, 3);
      a->wait();
      b->wait();
    } else {
      Tensor t3 = empty({2}), t7 = empty({2});
      recv(t3, 0, nullptr, 3);
      recv(t7, 0, nullptr, 7);
      require(t3.equal(full({2}, 3.0)) && t7.equal(full({2}, 7.0)), "tagged messages");
    }
  }));
}

TEST(PointToPoint, RecvFromAnyRankSaysWhoSent) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(3, [&](int rank) {
    rv.init(rank, 3);
    if (rank == 0) {
      std::vector<int> senders;
      for (int i = 0; i < 2; ++i) {
        Tensor t = empty({1}, TensorOptions(kInt64));
        senders.push_back(recv(t));
        require(t.item().to_long() == senders.back() * 10, "payload of rank ", senders.back());
      }
      require((senders[0] == 1 && senders[1] == 2) || (senders[0] == 2 && senders[1] == 1),
              "senders");
    } else {
      send(full({1}, rank * 10, TensorOptions(kInt64)), 0);
    }
  }));
}

TEST(PointToPoint, BatchIsendIrecvRing) {
  const Rendezvous rv;
  constexpr int kWorld = 4;
  expect_all_passed(run_ranks(kWorld, [&](int rank) {
    rv.init(rank, kWorld);
    const Tensor out = full({3, 2}, rank, TensorOptions(kFloat32)).t();  // non-contiguous send
    Tensor in = empty({2, 3}).t();                                       // and receive
    auto works = batch_isend_irecv({{P2POp::ISend, out, (rank + 1) % kWorld},
                                    {P2POp::IRecv, in, (rank + kWorld - 1) % kWorld}});
    for (auto& w : works) w->wait(std::chrono::seconds(10));
    require(in.equal(full({3, 2}, (rank + kWorld - 1) % kWorld, TensorOptions(kFloat32))),
            "ring: ", in);
    barrier();  // no rank leaves while its peer still reads
  }));
}

TEST(PointToPoint, AMismatchedSendIsAnErrorOfTheRecvNotACrash) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(2, [&](int rank) {
    rv.init(rank, 2);
    if (rank == 0) {
      send(zeros({8}), 1);                        // larger than the recv's tensor
      send(ones({2}, TensorOptions(kInt32)), 1);  // another dtype
      send(full({3}, 5.0), 1);                    // then a matching one
      barrier();
      return;
    }
    for (const Tensor& t : {empty({4}), empty({2})}) {
      try {
        recv(t, 0);
        require(false, "a mismatched recv did not throw");
      } catch (const Error& e) {
        const std::string m = e.what();
        require(m.find("rank 0 sent ") != std::string::npos &&
                    m.find("must agree in element count and dtype") != std::string::npos,
                "unexpected message: ", m);
      }
    }
    Tensor t = empty({3});
    recv(t, 0);
    require(t.equal(full({3}, 5.0)), "the message after the mismatches: ", t);
    barrier();
  }));
}

TEST(PointToPoint, DestroyingTheGroupStopsAPendingRecvAtOnce) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(2, [&](int rank) {
    rv.init(rank, 2, std::chrono::seconds(20));
    // Rank 0 stays connected, and never sends, until rank 1 has destroyed its group.
    TCPStore side("127.0.0.1", rv.port, std::nullopt, false, std::chrono::seconds(20));
    if (rank == 0) {
      side.wait({"rank1_destroyed"});
      destroy_process_group();
      return;
    }
    const std::shared_ptr<Work> pending = irecv(empty({4}), 0);
    const auto start = std::chrono::steady_clock::now();
    destroy_process_group();
    const auto took = std::chrono::steady_clock::now() - start;
    require(took < std::chrono::seconds(5), "destroy_process_group took ",
            std::chrono::duration_cast<std::chrono::milliseconds>(took).count(), " ms");
    side.set("rank1_destroyed", std::string("1"));
    try {
      pending->wait();
      require(false, "the aborted recv succeeded");
    } catch (const Error& e) {
      require(std::string(e.what()).find("its group was destroyed first") != std::string::npos,
              e.what());
    }
  }));
}

TEST(PointToPoint, ARecvThatNeverMatchesTimesOut) {
  const Rendezvous rv;
  expect_all_passed(run_ranks(2, [&](int rank) {
    rv.init(rank, 2, std::chrono::milliseconds(300));
    // Rank 0 stays connected (without a collective, which would time out too) until rank 1 is
    // done.
    TCPStore side("127.0.0.1", rv.port, std::nullopt, false, std::chrono::seconds(20));
    if (rank == 0) {
      side.wait({"rank1_done"});
      return;
    }
    try {
      recv(empty({4}), 0);
      require(false, "recv without a sender did not throw");
    } catch (const Error& e) {
      const std::string m = e.what();
      require(m.rfind("recv: 4 float32 elements from rank 0: ", 0) == 0 &&
                  m.find("Timed out waiting 300ms") != std::string::npos,
              "unexpected message: ", m);
    }
    side.set("rank1_done", std::string("1"));
  }));
}

}  // namespace
}  // namespace kiln::distributed
