// The agreement check every collective starts with, and the direct exchange it travels on.
//
// Gloo's ring algorithms take size() - 1 rounds (2 (size() - 1) for all_reduce), each a round of
// Gloo's ready-to-receive handshake; for small tensors those rounds are the whole cost. A direct
// exchange, where every rank sends straight to every peer, is one round. The check's exchange
// carries a small all_reduce's values too, so that such an all_reduce is one round in all.
#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <sstream>

#include "kiln/core/error.h"
#include "kiln/distributed/process_group_impl.h"

namespace kiln::distributed {
namespace {

// The slots of direct exchanges, apart from Gloo's collectives and point-to-point messages.
constexpr uint64_t kExchangeSlot = uint64_t{0xfc} << 56;

const char* kind_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllReduce:
      return "all_reduce";
    case CollectiveKind::Broadcast:
      return "broadcast";
    case CollectiveKind::Reduce:
      return "reduce";
    case CollectiveKind::AllGather:
      return "all_gather";
    case CollectiveKind::Gather:
      return "gather";
    case CollectiveKind::Scatter:
      return "scatter";
    case CollectiveKind::ReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::AllToAll:
      return "all_to_all";
    case CollectiveKind::Barrier:
      return "barrier";
  }
  return "?";
}

CallRow encode(const CollectiveCall& c) {
  return {static_cast<int64_t>(c.kind), c.reduce_op, c.dtype, c.numel, c.root};
}

std::string describe(const CallRow& e) {
  std::ostringstream os;
  os << kind_name(static_cast<CollectiveKind>(e[0]));
  if (e[1] >= 0) os << " (" << reduce_op_name(static_cast<ReduceOp>(e[1])) << ")";
  if (e[2] >= 0) os << " of " << e[3] << " " << static_cast<ScalarType>(e[2]) << " elements";
  if (e[4] >= 0) os << " with root " << e[4];
  return os.str();
}

}  // namespace

void ProcessGroup::Impl::DirectExchange::post(const Impl& g, const void* mine, size_t bytes,
                                              char* all, size_t stride, uint64_t slot) {
  group = &g;
  char* const own = all + g.rank * stride;
  if (bytes > 0 && own != mine) std::memcpy(own, mine, bytes);
  if (g.size == 1) return;
  send = g.context->createUnboundBuffer(const_cast<void*>(mine), bytes);
  recv = g.context->createUnboundBuffer(all, stride * g.size);
  // Each rank starts with its next peer, so that no rank hears from all at once. A peer may send
  // less than stride (Gloo accepts a shorter message, never a longer one).
  for (int step = 1; step < g.size; ++step) {
    const int from = (g.rank + g.size - step) % g.size;
    recv->recv(from, slot, from * stride, stride);
    send->send((g.rank + step) % g.size, slot, 0, bytes);
  }
}

void ProcessGroup::Impl::DirectExchange::wait() {
  if (!send) return;
  const auto timeout = group->options.timeout;
  for (int step = 1; step < group->size; ++step)
    KILN_CHECK(recv->waitRecv(timeout), "exchange on ", group->where(),
               ": a peer's message did not arrive within ", timeout.count(), " ms");
  for (int step = 1; step < group->size; ++step)
    KILN_CHECK(send->waitSend(timeout), "exchange on ", group->where(),
               ": a message was not sent within ", timeout.count(), " ms");
}

std::vector<int64_t> ProcessGroup::Impl::gather_rows(const std::vector<int64_t>& mine,
                                                     uint32_t tag) const {
  std::vector<int64_t> all(mine.size() * size);
  const size_t bytes = mine.size() * sizeof(int64_t);
  DirectExchange exchange;
  exchange.post(*this, mine.data(), bytes, reinterpret_cast<char*>(all.data()), bytes,
                kExchangeSlot | tag);
  exchange.wait();
  return all;
}

size_t ProcessGroup::Impl::carry_limit() const {
  constexpr size_t kOutgoing = size_t{4} << 20, kPerPeer = size_t{1} << 20;
  return size == 1 ? kPerPeer : std::min(kPerPeer, kOutgoing / (size - 1));
}

size_t ProcessGroup::Impl::agreement_stride() const { return sizeof(CallRow) + carry_limit(); }

ProcessGroup::Impl::DirectExchange ProcessGroup::Impl::post_agreement(const CollectiveCall& mine,
                                                                      uint32_t tag,
                                                                      const Tensor* carried) const {
  const size_t carried_bytes = carried ? carried->nbytes() : 0;
  KILN_CHECK(carried_bytes <= carry_limit(), "agree: ", carried_bytes, " bytes cannot travel");
  const size_t stride = agreement_stride();
  if (!agreement_blocks) agreement_blocks.reset(new char[stride * size]);  // pages touched on use
  char* const own = agreement_blocks.get() + rank * stride;
  const CallRow row = encode(mine);
  std::memcpy(own, row.data(), sizeof row);
  if (carried_bytes > 0) std::memcpy(own + sizeof row, carried->data_ptr(), carried_bytes);
  DirectExchange exchange;
  exchange.post(*this, own, sizeof row + carried_bytes, agreement_blocks.get(), stride,
                kExchangeSlot | tag);
  return exchange;
}

std::vector<CallRow> ProcessGroup::Impl::agreed_rows() const {
  std::vector<CallRow> rows(size);
  for (int r = 0; r < size; ++r)
    std::memcpy(rows[r].data(), agreement_blocks.get() + r * agreement_stride(), sizeof(CallRow));
  return rows;
}

void ProcessGroup::Impl::check_rows(const CollectiveCall& mine,
                                    const std::vector<CallRow>& rows) const {
  const CallRow row = encode(mine);
  if (std::all_of(rows.begin(), rows.end(), [&](const CallRow& r) { return r == row; })) return;
  std::ostringstream os;
  os << kind_name(mine.kind) << ": the ranks of " << where()
     << " called different collectives or passed different tensors:";
  for (int r = 0; r < size; ++r) os << (r ? ";" : "") << " rank " << r << " " << describe(rows[r]);
  KILN_FAIL(os.str());
}

char* ProcessGroup::Impl::agree(const CollectiveCall& mine, uint32_t tag,
                                const Tensor* carried) const {
  post_agreement(mine, tag, carried).wait();
  check_rows(mine, agreed_rows());
  return agreement_blocks.get() + sizeof(CallRow);
}

void ProcessGroup::Impl::fold_in_rank_order(char* out, char* values, size_t stride, size_t numel,
                                            const ElementReduction& reduction) const {
  // Rank 0 folds into out, which holds its values; the others fold into rank 0's copy until
  // the last step, since their own values are needed at their turn.
  const char* acc = rank == 0 ? out : values;
  for (int r = 1; r < size; ++r) {
    char* const into = rank == 0 || r == size - 1 ? out : values;
    reduction(into, acc, r == rank ? out : values + r * stride, numel);
    acc = into;
  }
}

}  // namespace kiln::distributed
