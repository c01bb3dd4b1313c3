// A large all_reduce in two direct rounds per piece (reduce-scatter, then all-gather), where
// Gloo's ring takes 2 (size - 1) rounds. Both move 2 (size - 1) / size of the tensor per rank,
// so the rounds saved are latency: on a machine whose ranks share cores, every round waits for
// each rank to be scheduled. The agreement check travels beside the first round instead of
// before it. Every message of that round fits a receive of a fixed size, whatever the peer
// passed, so a peer that passed something else leaves nothing in flight once the check fails.
#include <gloo/transport/unbound_buffer.h>

#include <algorithm>

#include "kiln/core/error.h"
#include "kiln/distributed/process_group_impl.h"

namespace kiln::distributed {
namespace {

constexpr uint64_t kTwoShotSlot = uint64_t{0xfb} << 56;
// Beyond this many ranks every rank would hear from too many at once: Gloo's ring serves them.
constexpr int kMaxRanks = 16;

uint64_t slot(uint32_t tag, size_t piece, int round) {
  return kTwoShotSlot | (static_cast<uint64_t>(piece * 2 + round) & 0xffffff) << 32 | tag;
}

// Bytes of one message: of each rank's chunk, per round. A multiple of every element size, so
// that the first round's receives take the same bytes whatever dtype each rank passed.
size_t piece_bytes(int size) {
  constexpr size_t kPiece = size_t{4} << 20, kOutgoing = size_t{16} << 20;
  return std::min(kPiece, kOutgoing / std::max(1, size - 1)) / 64 * 64;
}

}  // namespace

bool ProcessGroup::Impl::uses_two_shot(ScalarType dtype, int64_t numel) const {
  // Above (size - 1)^2 elements, every rank's chunk has some.
  return size > 1 && size <= kMaxRanks && numel > int64_t{size} * size &&
         static_cast<size_t>(numel) * element_size(dtype) > carry_limit();
}

void ProcessGroup::Impl::all_reduce_two_shot(const CollectiveCall& call, const Tensor& dense,
                                             const ElementReduction& reduction,
                                             uint32_t tag) const {
  const size_t elem = dense.element_size(), numel = static_cast<size_t>(dense.numel());
  const size_t chunk = (numel + size - 1) / size;  // elements of each rank's chunk, the last fewer
  const size_t piece = piece_bytes(size) / elem;   // elements of a chunk per message
  auto length = [&](int r, size_t at) {            // of rank r's chunk, from `at`, in one message
    const size_t begin = std::min(numel, r * chunk + at);
    return std::min({piece, chunk - std::min(chunk, at), numel - begin});
  };
  std::unique_ptr<char[]> scratch(new char[piece * elem * size]);
  char* const data = static_cast<char*>(dense.data_ptr());
  const auto outgoing = context->createUnboundBuffer(data, numel * elem);
  const auto gathered = context->createUnboundBuffer(data, numel * elem);
  const auto incoming = context->createUnboundBuffer(scratch.get(), piece * elem * size);
  auto wait = [&](const auto& buffer, bool recv, int count) {
    for (int i = 0; i < count; ++i)
      KILN_CHECK(recv ? buffer->waitRecv(options.timeout) : buffer->waitSend(options.timeout),
                 "all_reduce on ", where(), ": a peer's piece did not ", recv ? "arrive" : "go",
                 " within ", options.timeout.count(), " ms");
  };

  DirectExchange agreement = post_agreement(call, tag, nullptr);
  for (size_t at = 0, index = 0; at < chunk; at += piece, ++index) {
    // Reduce-scatter: rank r receives every rank's elements of this piece of chunk r. The first
    // piece's receives take a whole message's bytes, whatever a peer sends.
    const size_t mine = length(rank, at);
    for (int step = 1; step < size; ++step) {
      const int from = (rank + size - step) % size, to = (rank + step) % size;
      if (mine > 0)
        incoming->recv(from, slot(tag, index, 0), from * piece * elem,
                       (index == 0 ? piece : mine) * elem);
      if (const size_t n = length(to, at); n > 0)
        outgoing->send(to, slot(tag, index, 0), (to * chunk + at) * elem, n * elem);
    }
    if (index == 0) {
      agreement.wait();
      const std::vector<CallRow> rows = agreed_rows();
      if (!std::all_of(rows.begin(), rows.end(),
                       [&](const CallRow& r) { return r == rows[rank]; })) {
        // Peers that run this algorithm too exchange a first piece with this rank; let those
        // land before failing. The others send none and take none.
        int peers = 0;
        for (int r = 0; r < size; ++r)
          peers += r != rank && rows[r][0] == static_cast<int64_t>(CollectiveKind::AllReduce) &&
                   uses_two_shot(static_cast<ScalarType>(rows[r][2]), rows[r][3]);
        wait(incoming, true, peers);
        wait(outgoing, false, peers);
        check_rows(call, rows);
      }
    }
    int sends = 0;
    for (int step = 1; step < size; ++step) sends += length((rank + step) % size, at) > 0;
    wait(incoming, true, mine > 0 ? size - 1 : 0);
    wait(outgoing, false, sends);
    if (mine > 0)
      fold_in_rank_order(data + (rank * chunk + at) * elem, scratch.get(), piece * elem, mine,
                         reduction);
    // All-gather: each rank's reduced piece to every peer.
    int receives = 0;
    for (int step = 1; step < size; ++step) {
      const int from = (rank + size - step) % size, to = (rank + step) % size;
      if (const size_t n = length(from, at); n > 0) {
        gathered->recv(from, slot(tag, index, 1), (from * chunk + at) * elem, n * elem);
        ++receives;
      }
      if (mine > 0)
        outgoing->send(to, slot(tag, index, 1), (rank * chunk + at) * elem, mine * elem);
    }
    wait(gathered, true, receives);
    wait(outgoing, false, mine > 0 ? size - 1 : 0);
  }
}

}  // namespace kiln::distributed
