#pragma once
// The inside of ProcessGroup, shared by its files (process_group.cpp: set-up and the agreement
// check; collectives.cpp; point_to_point.cpp). Not installed for users: it includes Gloo.
#include <gloo/rendezvous/context.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/distributed/process_group.h"
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

struct ProcessGroup::Impl {
  int rank = 0, size = 1;
  Options options;
  std::shared_ptr<gloo::rendezvous::Context> context;
  std::mutex tag_mutex;
  uint32_t next_tag = 0;
  // Collectives, in call order; and the completion of point-to-point transfers, which are posted
  // by the caller at once.
  std::unique_ptr<TaskQueue> collectives, transfers;

  std::string where() const;

  // Queues fn(tag) on `collectives`; the tags follow call order, the same on every rank.
  std::shared_ptr<Work> enqueue(const char* what, std::function<void(uint32_t tag)> fn);

  // Every rank's CollectiveCall compared (one small exchange under `tag`): a kiln::Error on every
  // rank, listing what each passed, when they differ.
  void agree(const CollectiveCall& mine, uint32_t tag) const;
  // Every rank's row of `n` integers, gathered under `tag` (rank r's at [r * n, (r + 1) * n)).
  std::vector<int64_t> gather_rows(const std::vector<int64_t>& mine, uint32_t tag) const;

  void check_tensor(const char* what, const Tensor& t) const;
  void check_rank(const char* what, const char* role, int r) const;
  void check_same(const char* what, const Tensor& t, const Tensor& like) const;
};

}  // namespace kiln::distributed
