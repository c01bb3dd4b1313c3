#pragma once
// The inside of ProcessGroup, shared by its files (process_group.cpp: set-up; agreement.cpp: the
// agreement check and direct exchanges; collectives.cpp; two_shot_all_reduce.cpp;
// point_to_point.cpp). Not installed for users: it includes Gloo.
#include <gloo/rendezvous/context.h>
#include <signal.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "kiln/distributed/flight_recorder.h"
#include "kiln/distributed/process_group.h"
#include "kiln/distributed/reduce_op.h"
#include "kiln/distributed/task_queue.h"

namespace kiln::distributed {

enum class CollectiveKind : int64_t {
  AllReduce = 1,
  Broadcast,
  Reduce,
  AllGather,
  Gather,
  Scatter,
  ReduceScatter,
  AllToAll,
  Barrier
};

// What one rank passed to a collective; every rank must pass the same.
struct CollectiveCall {
  CollectiveKind kind;
  int64_t reduce_op = -1, dtype = -1, numel = -1, root = -1;

  static CollectiveCall of(CollectiveKind kind, const Tensor& t, int root = -1);
  static CollectiveCall of(CollectiveKind kind, const Tensor& t, ReduceOp op, int root = -1);
};
using CallRow = std::array<int64_t, 5>;  // a CollectiveCall as sent

// Calls f(U{}) with an unsigned integer type of `size` bytes: Gloo splits a reduction's buffer
// into segments of whole elements of the type it is given, so it must be given the element's
// size (the arithmetic is ours, on the element's real type).
template <class F>
void with_element_size(size_t size, F&& f) {
  switch (size) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    default:
      return f(uint64_t{});
  }
}

// t itself when it is dense, else a dense copy that write_back() returns to t.
struct DenseBuffer {
  Tensor original, dense;
  explicit DenseBuffer(const Tensor& t);
  char* data() const { return static_cast<char*>(dense.data_ptr()); }
  void write_back() const;
};

// Gloo writes to its sockets without MSG_NOSIGNAL, so a peer that died would kill this process
// with SIGPIPE (Python ignores SIGPIPE; a C++ program does not). Code that does Gloo I/O runs
// with SIGPIPE blocked: the group's connection, its queues' threads (started inside one, they
// inherit the mask; so does Gloo's event loop) and the posting of point-to-point messages. A
// write to a dead peer then fails with EPIPE, which Gloo reports as an error.
class SigpipeBlocked {
 public:
  SigpipeBlocked();
  ~SigpipeBlocked();
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  static const sigset_t& sigpipe();
  sigset_t old_;
};

struct ProcessGroup::Impl {
  int rank = 0, size = 1;
  Options options;
  std::shared_ptr<gloo::rendezvous::Context> context;
  std::mutex tag_mutex;
  uint32_t next_tag = 0;
  std::unique_ptr<TaskQueue> collectives;  // in call order
  // The completions of point-to-point transfers (posted by the caller at once), one queue per
  // direction, peer and tag: a transfer waits only behind those it is ordered after anyway, so a
  // recv that waits does not hold up a send to it, or a recv from another rank or tag.
  std::mutex transfer_mutex;
  std::map<std::tuple<bool, int, int>, std::unique_ptr<TaskQueue>> transfer_queues;

  TaskQueue& transfer_queue(bool sending, int peer, int tag);

  // The buffers of posted point-to-point transfers, so that destroying the group stops their
  // waits at once instead of after the timeout.
  std::mutex posted_mutex;
  std::vector<std::weak_ptr<gloo::transport::UnboundBuffer>> posted;
  bool transfers_aborted = false;
  std::shared_ptr<gloo::transport::UnboundBuffer> post_buffer(void* data, size_t bytes);
  void abort_transfers();

  std::string where() const;

  // Queues fn(tag) on `collectives`; the tags follow call order, the same on every rank. The
  // flight recorder notes the call with the tensors' sizes; when fn fails, it is dumped.
  std::shared_ptr<Work> enqueue(const char* what, const std::vector<Tensor>& inputs,
                                const std::vector<Tensor>& outputs,
                                std::function<void(uint32_t tag)> fn);
  int64_t collective_seq = 0;  // collectives queued (the connection is number 0)
  int64_t p2p_seq = 0;         // point-to-point calls made
  RecordedGroup recorded() const { return {options.name, rank, size}; }
  // A flight-recorder entry for a send or recv of `t`, numbered by p2p_seq.
  uint64_t record_p2p(std::string op, const Tensor& t);
  // Runs fn as flight-recorder entry `id`: started, then finished; a failure dumps the recorder
  // and is rethrown as a kiln::Error naming `what` and the dump.
  void run_recorded(uint64_t id, const char* what, const std::function<void()>& fn) const;

  // Every rank sends `bytes` from `mine` straight to every peer under `slot`; rank r's message
  // lands at all + r * stride (bytes <= stride on every rank). One round, where Gloo's ring
  // takes size - 1. post() starts it, wait() waits for every message both ways.
  struct DirectExchange {
    const Impl* group = nullptr;
    std::shared_ptr<gloo::transport::UnboundBuffer> send, recv;
    void post(const Impl& g, const void* mine, size_t bytes, char* all, size_t stride,
              uint64_t slot);
    void wait();
  };

  // The agreement check (agreement.cpp): every rank's CollectiveCall, compared after one direct
  // exchange under `tag`; a kiln::Error on every rank, listing what each passed, when they
  // differ. A dense tensor of at most carry_limit() bytes can travel with the check: agree()
  // then returns where every rank's copy of its bytes landed, rank r's at r * agreement_stride().
  char* agree(const CollectiveCall& mine, uint32_t tag, const Tensor* carried = nullptr) const;
  // out <- the reduction of every rank's values in rank order, so that every rank's result is
  // the same, bit for bit: rank r's at values + r * stride, this rank's in out. Rank 0's copy in
  // values is overwritten.
  void fold_in_rank_order(char* out, char* values, size_t stride, size_t numel,
                          const ElementReduction& reduction) const;
  size_t carry_limit() const;
  size_t agreement_stride() const;
  // agree() in its steps, for a collective that sends data while the check is under way.
  DirectExchange post_agreement(const CollectiveCall& mine, uint32_t tag,
                                const Tensor* carried) const;
  std::vector<CallRow> agreed_rows() const;
  void check_rows(const CollectiveCall& mine, const std::vector<CallRow>& rows) const;
  mutable std::unique_ptr<char[]> agreement_blocks;  // used by one collective at a time
  // Every rank's row of `n` integers, gathered under `tag` (rank r's at [r * n, (r + 1) * n)).
  std::vector<int64_t> gather_rows(const std::vector<int64_t>& mine, uint32_t tag) const;

  // Whether all_reduce of `call` takes two direct rounds (reduce-scatter, all-gather) per piece,
  // its first round carrying the agreement check (two_shot_all_reduce.cpp).
  bool uses_two_shot(ScalarType dtype, int64_t numel) const;
  void all_reduce_two_shot(const CollectiveCall& call, const Tensor& dense,
                           const ElementReduction& reduction, uint32_t tag) const;

  void check_tensor(const char* what, const Tensor& t) const;
  void check_rank(const char* what, const char* role, int r) const;
  void check_same(const char* what, const Tensor& t, const Tensor& like) const;
};

}  // namespace kiln::distributed
