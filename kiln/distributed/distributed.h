#pragma once
// torch.distributed for C++: a default process group set up by init_process_group, subgroups,
// and the collectives as free functions with PyTorch's names and arguments (ranks are global
// ranks, as in PyTorch). A collective returns its Work when async_op is true, else it waits and
// returns null. docs/distributed.md.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/distributed/file_store.h"
#include "kiln/distributed/hash_store.h"
#include "kiln/distributed/prefix_store.h"
#include "kiln/distributed/process_group.h"
#include "kiln/distributed/store.h"
#include "kiln/distributed/tcp_store.h"

namespace kiln::distributed {

struct InitOptions {
  // "gloo", "cpu:gloo,cuda:nccl" or empty (that mapping, the default).
  std::string backend;
  // "env://" (the default: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, or Open MPI's and
  // Slurm's variables), "tcp://host:port" or "file:///path". Ignored when `store` is given.
  std::string init_method = "env://";
  int world_size = -1, rank = -1;  // -1: from the environment
  std::chrono::milliseconds timeout = std::chrono::minutes(30);
  std::shared_ptr<Store> store;
  std::string group_name = "default";
};

void init_process_group(const InitOptions& options = {});
bool is_initialized();
// Destroys `group`, or the default group and every subgroup when null.
void destroy_process_group(const std::shared_ptr<ProcessGroup>& group = nullptr);

using Group = std::shared_ptr<ProcessGroup>;

// The default group (an error when init_process_group has not run).
Group default_group();

// This process's rank in `group` (the default group when null) and the group's size.
int get_rank(const Group& group = nullptr);
int get_world_size(const Group& group = nullptr);
// A group of the given global ranks (all ranks when empty). Every rank of the default group must
// call it, in the same order; ranks outside `ranks` get null.
Group new_group(std::vector<int> ranks = {},
                std::optional<std::chrono::milliseconds> timeout = std::nullopt);
// The global rank of rank `group_rank` in group.
int get_global_rank(const Group& group, int group_rank);
// The live group of that name (the default group's name, "group1", ..., "single_rank"), or
// null. The functional collectives name their group this way.
Group find_group(const std::string& name);
// A group of this process alone, needing no init_process_group: collectives on it are copies.
Group single_rank_group();

std::shared_ptr<Work> all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::SUM,
                                 const Group& group = nullptr, bool async_op = false);
std::shared_ptr<Work> broadcast(const Tensor& tensor, int src, const Group& group = nullptr,
                                bool async_op = false);
std::shared_ptr<Work> reduce(const Tensor& tensor, int dst, ReduceOp op = ReduceOp::SUM,
                             const Group& group = nullptr, bool async_op = false);
std::shared_ptr<Work> all_gather(const std::vector<Tensor>& tensor_list, const Tensor& tensor,
                                 const Group& group = nullptr, bool async_op = false);
std::shared_ptr<Work> all_gather_into_tensor(const Tensor& output, const Tensor& input,
                                             const Group& group = nullptr, bool async_op = false);
// gather_list (root only, empty elsewhere) gets every rank's tensor; scatter_list (src only)
// gives rank r its entry r.
std::shared_ptr<Work> gather(const Tensor& tensor, const std::vector<Tensor>& gather_list, int dst,
                             const Group& group = nullptr, bool async_op = false);
std::shared_ptr<Work> scatter(const Tensor& tensor, const std::vector<Tensor>& scatter_list,
                              int src, const Group& group = nullptr, bool async_op = false);
std::shared_ptr<Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& input_list,
                                     ReduceOp op = ReduceOp::SUM, const Group& group = nullptr,
                                     bool async_op = false);
std::shared_ptr<Work> reduce_scatter_tensor(const Tensor& output, const Tensor& input,
                                            ReduceOp op = ReduceOp::SUM,
                                            const Group& group = nullptr, bool async_op = false);
std::shared_ptr<Work> all_to_all_single(const Tensor& output, const Tensor& input,
                                        std::vector<int64_t> output_split_sizes = {},
                                        std::vector<int64_t> input_split_sizes = {},
                                        const Group& group = nullptr, bool async_op = false);
std::shared_ptr<Work> all_to_all(const std::vector<Tensor>& output_tensor_list,
                                 const std::vector<Tensor>& input_tensor_list,
                                 const Group& group = nullptr, bool async_op = false);
std::shared_ptr<Work> barrier(const Group& group = nullptr, bool async_op = false);

// Point to point (dst/src are global ranks). send and recv wait; recv returns the sender's
// global rank (src -1: from any rank). isend and irecv return their Work.
void send(const Tensor& tensor, int dst, const Group& group = nullptr, int tag = 0);
int recv(const Tensor& tensor, int src = -1, const Group& group = nullptr, int tag = 0);
std::shared_ptr<Work> isend(const Tensor& tensor, int dst, const Group& group = nullptr,
                            int tag = 0);
std::shared_ptr<Work> irecv(const Tensor& tensor, int src = -1, const Group& group = nullptr,
                            int tag = 0);

// One send or recv of batch_isend_irecv.
struct P2POp {
  enum Kind { ISend, IRecv } kind;
  Tensor tensor;
  int peer;
  Group group = nullptr;
  int tag = 0;
};
std::vector<std::shared_ptr<Work>> batch_isend_irecv(const std::vector<P2POp>& ops);

}  // namespace kiln::distributed
