#pragma once
// A group of ranks that run collectives together (c10d's ProcessGroup), on Gloo over TCP. Every
// collective is queued on the group's worker thread in call order and returns a Work; ranks must
// call the same collectives in the same order, as in PyTorch. Before exchanging data, the ranks
// compare what each passed (op, dtype, element count, root), so a mismatch is a kiln::Error on
// every rank that names the ranks and what they passed, never a hang or garbage.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/distributed/reduce_op.h"
#include "kiln/distributed/store.h"
#include "kiln/distributed/work.h"

namespace kiln::distributed {

class ProcessGroup {
 public:
  struct Options {
    std::chrono::milliseconds timeout = std::chrono::minutes(30);
    std::string name = "default";
    // The address this rank listens on for its peers; empty: 127.0.0.1 when `loopback`, else
    // the address of this host's name (GLOO_SOCKET_IFNAME names an interface instead).
    std::string hostname;
    bool loopback = false;
  };

  // Connects rank `rank` of `size` with its peers through `store` (every rank calls this).
  ProcessGroup(std::shared_ptr<Store> store, int rank, int size, Options options);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const;
  int size() const;
  const std::string& name() const;
  std::chrono::milliseconds timeout() const;

  // In place on `tensor` (any strides); AVG divides the sum by size().
  std::shared_ptr<Work> all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::SUM);
  // root's tensor into every rank's `tensor`.
  std::shared_ptr<Work> broadcast(const Tensor& tensor, int root);
  // The reduction lands in root's `tensor`; other ranks' tensors are left as they were.
  std::shared_ptr<Work> reduce(const Tensor& tensor, int root, ReduceOp op = ReduceOp::SUM);
  // out (size() x input's elements, concatenated along dim 0) gets every rank's input in rank
  // order.
  std::shared_ptr<Work> all_gather_into_tensor(const Tensor& out, const Tensor& input);
  // outputs[r] gets rank r's input.
  std::shared_ptr<Work> all_gather(const std::vector<Tensor>& outputs, const Tensor& input);
  // outputs[r] gets rank r's input on root (the other ranks pass no outputs).
  std::shared_ptr<Work> gather(const std::vector<Tensor>& outputs, const Tensor& input, int root);
  // Rank r's output gets root's inputs[r] (the other ranks pass no inputs).
  std::shared_ptr<Work> scatter(const Tensor& output, const std::vector<Tensor>& inputs, int root);
  // input (size() x output's elements) reduced across ranks; rank r keeps piece r.
  std::shared_ptr<Work> reduce_scatter_tensor(const Tensor& output, const Tensor& input,
                                              ReduceOp op = ReduceOp::SUM);
  // inputs[r], reduced across ranks, lands in rank r's output.
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                       ReduceOp op = ReduceOp::SUM);
  // Rows (dim 0) of input go to the ranks in order, input_split_sizes[s] of them to rank s, and
  // output takes output_split_sizes[r] rows from rank r; empty split sizes split evenly.
  std::shared_ptr<Work> all_to_all_single(const Tensor& output, const Tensor& input,
                                          std::vector<int64_t> output_split_sizes = {},
                                          std::vector<int64_t> input_split_sizes = {});
  // outputs[r] gets rank r's inputs[this rank].
  std::shared_ptr<Work> all_to_all(const std::vector<Tensor>& outputs,
                                   const std::vector<Tensor>& inputs);
  std::shared_ptr<Work> barrier();

  // Point to point, matched by (peer, tag) in call order. The send copies tensor at once; recv
  // from src -1 takes the first message from any rank (Work::source_rank() says which).
  std::shared_ptr<Work> send(const Tensor& tensor, int dst, int tag = 0);
  std::shared_ptr<Work> recv(const Tensor& tensor, int src, int tag = 0);

  // The Gloo side, in process_group_impl.h (not installed).
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::distributed
