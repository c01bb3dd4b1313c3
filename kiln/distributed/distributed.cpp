#include "kiln/distributed/distributed.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <numeric>

#include "kiln/core/error.h"
#include "kiln/distributed/file_store.h"
#include "kiln/distributed/flight_recorder.h"
#include "kiln/distributed/hash_store.h"
#include "kiln/distributed/prefix_store.h"
#include "kiln/distributed/tcp_store.h"

namespace kiln::distributed {
namespace {

struct State {
  std::mutex mutex;
  std::shared_ptr<Store> store;
  Group world;
  int global_rank = -1;
  bool loopback = false;  // the default group's peers meet on 127.0.0.1
  int groups_made = 0;
  std::map<const ProcessGroup*, std::vector<int>> global_ranks;  // of every live group
  std::map<std::string, std::weak_ptr<ProcessGroup>> by_name;
};

State& state() {
  static State s;
  return s;
}

std::optional<int> env_int(std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (const char* v = std::getenv(name); v && *v) {
      char* end = nullptr;
      const long value = std::strtol(v, &end, 10);
      KILN_CHECK(*end == '\0' && value >= 0, "init_process_group: ", name, "=\"", v,
                 "\" is not a non-negative integer");
      return static_cast<int>(value);
    }
  return std::nullopt;
}

int rank_or_env(int given, std::initializer_list<const char*> names, const char* what) {
  if (given >= 0) return given;
  const std::optional<int> v = env_int(names);
  std::string list;
  for (const char* n : names) list += std::string(list.empty() ? "" : ", ") + n;
  KILN_CHECK(v.has_value(), "init_process_group: the ", what,
             " was not given and none of these environment variables is set: ", list);
  return *v;
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

struct Rendezvous {
  std::shared_ptr<Store> store;
  bool loopback = false;
};

uint16_t parse_port(const std::string& text, const std::string& source) {
  char* end = nullptr;
  const long port = std::strtol(text.c_str(), &end, 10);
  KILN_CHECK(!text.empty() && *end == '\0' && port > 0 && port < 65536,
             "init_process_group: ", source, " gives port \"", text,
             "\"; expected an integer in [1, 65535]");
  return static_cast<uint16_t>(port);
}

Rendezvous tcp_rendezvous(const std::string& host, uint16_t port, int rank, int world_size,
                          std::chrono::milliseconds timeout) {
  return {std::make_shared<TCPStore>(host, port, world_size, rank == 0, timeout),
          is_loopback(host)};
}

Rendezvous rendezvous(const InitOptions& o, int rank, int world_size) {
  if (o.store) return {o.store, false};
  const std::string& m = o.init_method.empty() ? std::string("env://") : o.init_method;
  if (m == "env://") {
    const char* addr = std::getenv("MASTER_ADDR");
    const char* port = std::getenv("MASTER_PORT");
    KILN_CHECK(addr && *addr && port && *port,
               "init_process_group: init_method env:// needs MASTER_ADDR and MASTER_PORT to be "
               "set (MASTER_ADDR=",
               addr ? addr : "<unset>", ", MASTER_PORT=", port ? port : "<unset>", ")");
    // Under `kiln run` the launcher serves the store and every rank is its client.
    const char* agent = std::getenv("KILN_USE_AGENT_STORE");
    const bool agent_store = agent && std::string(agent) == "1";
    return {std::make_shared<TCPStore>(addr, parse_port(port, "MASTER_PORT"), world_size,
                                       rank == 0 && !agent_store, o.timeout),
            is_loopback(addr)};
  }
  if (m.rfind("tcp://", 0) == 0) {
    const std::string rest = m.substr(6);
    const size_t colon = rest.rfind(':');
    KILN_CHECK(colon != std::string::npos && colon > 0, "init_process_group: init_method \"", m,
               "\" is not tcp://host:port");
    std::string host = rest.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']')
      host = host.substr(1, host.size() - 2);
    return tcp_rendezvous(host, parse_port(rest.substr(colon + 1), m), rank, world_size, o.timeout);
  }
  if (m.rfind("file://", 0) == 0) {
    const std::string path = m.substr(7);
    KILN_CHECK(!path.empty(), "init_process_group: init_method \"", m, "\" names no file");
    return {std::make_shared<FileStore>(path, world_size, o.timeout), true};
  }
  KILN_FAIL("init_process_group: init_method \"", m,
            "\" is not supported; expected env://, tcp://host:port or file:///path");
}

// Accepts "gloo", "cpu:gloo", "cpu:gloo,cuda:nccl", "nccl" and "" (the default mapping); CPU
// tensors always run on Gloo, and CUDA tensors are refused by the group until NCCL is built.
void check_backend(const std::string& backend) {
  if (backend.empty() || backend == "gloo" || backend == "nccl") return;
  size_t start = 0;
  while (start <= backend.size()) {
    const size_t comma = std::min(backend.find(',', start), backend.size());
    const std::string item = backend.substr(start, comma - start);
    KILN_CHECK(item == "cpu:gloo" || item == "cuda:nccl", "init_process_group: backend \"", backend,
               "\" is not supported; expected \"gloo\", \"nccl\" or a mapping like "
               "\"cpu:gloo,cuda:nccl\"");
    start = comma + 1;
  }
}

Group resolve(const Group& group, const char* what) {
  if (group) return group;
  State& s = state();
  std::lock_guard lock(s.mutex);
  KILN_CHECK(s.world != nullptr, what,
             ": the default process group is not initialized; call "
             "kiln::distributed::init_process_group() first");
  return s.world;
}

// The global ranks of g's members; the single-rank group's one rank is its rank 0.
std::vector<int> members(const Group& g, const char* what) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  const auto it = s.global_ranks.find(g.get());
  if (it != s.global_ranks.end()) return it->second;
  KILN_CHECK(g->size() == 1, what, ": group '", g->name(), "' has been destroyed");
  return {0};
}

int group_rank_of(const Group& g, int global_rank, const char* what) {
  const std::vector<int> ranks = members(g, what);
  const auto it = std::find(ranks.begin(), ranks.end(), global_rank);
  KILN_CHECK(it != ranks.end(), what, ": global rank ", global_rank, " is not in group '",
             g->name(), "'");
  return static_cast<int>(it - ranks.begin());
}

std::shared_ptr<Work> finish(std::shared_ptr<Work> work, bool async_op) {
  if (async_op) return work;
  work->wait();
  return nullptr;
}

}  // namespace

void init_process_group(const InitOptions& o) {
  State& s = state();
  {
    std::lock_guard lock(s.mutex);
    KILN_CHECK(s.world == nullptr,
               "init_process_group: the default process group is already initialized; call "
               "destroy_process_group() first");
  }
  check_backend(o.backend);
  const int world_size = rank_or_env(
      o.world_size, {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"}, "world size");
  const int rank = rank_or_env(o.rank, {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}, "rank");
  KILN_CHECK(world_size >= 1 && rank < world_size, "init_process_group: rank ", rank,
             " is not in [0, world size ", world_size, ")");
  FlightRecorder::get().set_rank(rank, world_size);
  Rendezvous r = rendezvous(o, rank, world_size);
  ProcessGroup::Options pg;
  pg.timeout = o.timeout;
  pg.name = o.group_name;
  pg.loopback = r.loopback;
  auto world = std::make_shared<ProcessGroup>(std::make_shared<PrefixStore>("0", r.store), rank,
                                              world_size, pg);
  std::vector<int> all(world_size);
  std::iota(all.begin(), all.end(), 0);
  std::lock_guard lock(s.mutex);
  s.store = r.store;
  s.world = world;
  s.global_rank = rank;
  s.loopback = r.loopback;
  s.groups_made = 1;
  s.global_ranks[world.get()] = all;
  s.by_name[world->name()] = world;
}

bool is_initialized() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.world != nullptr;
}

void destroy_process_group(const Group& group) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (group) {
    s.global_ranks.erase(group.get());
    s.by_name.erase(group->name());
    return;
  }
  s.global_ranks.clear();
  s.by_name.clear();
  s.world.reset();
  s.store.reset();
  s.global_rank = -1;
}

Group default_group() { return resolve(nullptr, "default_group"); }

int get_rank(const Group& group) { return resolve(group, "get_rank")->rank(); }
int get_world_size(const Group& group) { return resolve(group, "get_world_size")->size(); }

int get_global_rank(const Group& group, int group_rank) {
  const Group g = resolve(group, "get_global_rank");
  const std::vector<int> ranks = members(g, "get_global_rank");
  KILN_CHECK(group_rank >= 0 && group_rank < static_cast<int>(ranks.size()),
             "get_global_rank: ", group_rank, " is not a rank of group '", g->name(), "'");
  return ranks[group_rank];
}

Group new_group(std::vector<int> ranks, std::optional<std::chrono::milliseconds> timeout) {
  const Group world = resolve(nullptr, "new_group");
  State& s = state();
  std::shared_ptr<Store> store;
  int id = 0, me = 0;
  bool loopback = false;
  {
    std::lock_guard lock(s.mutex);
    store = s.store;
    loopback = s.loopback;
    id = s.groups_made++;
    me = s.global_rank;
  }
  if (ranks.empty()) {
    ranks.resize(world->size());
    std::iota(ranks.begin(), ranks.end(), 0);
  }
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  KILN_CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end() &&
                 sorted.front() >= 0 && sorted.back() < world->size(),
             "new_group: ranks must be distinct ranks of the default group [0, ", world->size(),
             ")");
  const auto it = std::find(ranks.begin(), ranks.end(), me);
  if (it == ranks.end()) return nullptr;
  ProcessGroup::Options pg;
  pg.timeout = timeout.value_or(world->timeout());
  pg.name = "group" + std::to_string(id);
  pg.loopback = loopback;
  const std::string id_text = std::to_string(id);
  auto g = std::make_shared<ProcessGroup>(std::make_shared<PrefixStore>(id_text, store),
                                          static_cast<int>(it - ranks.begin()),
                                          static_cast<int>(ranks.size()), pg);
  std::lock_guard lock(s.mutex);
  s.global_ranks[g.get()] = ranks;
  s.by_name[g->name()] = g;
  return g;
}

Group find_group(const std::string& name) {
  if (name == single_rank_group()->name()) return single_rank_group();
  State& s = state();
  std::lock_guard lock(s.mutex);
  const auto it = s.by_name.find(name);
  return it == s.by_name.end() ? nullptr : it->second.lock();
}

Group single_rank_group() {
  static const Group group = [] {
    ProcessGroup::Options o;
    o.name = "single_rank";
    o.loopback = true;
    return std::make_shared<ProcessGroup>(std::make_shared<HashStore>(), 0, 1, o);
  }();
  return group;
}

std::shared_ptr<Work> all_reduce(const Tensor& tensor, ReduceOp op, const Group& group,
                                 bool async_op) {
  return finish(resolve(group, "all_reduce")->all_reduce(tensor, op), async_op);
}

std::shared_ptr<Work> broadcast(const Tensor& tensor, int src, const Group& group, bool async_op) {
  const Group g = resolve(group, "broadcast");
  return finish(g->broadcast(tensor, group_rank_of(g, src, "broadcast")), async_op);
}

std::shared_ptr<Work> reduce(const Tensor& tensor, int dst, ReduceOp op, const Group& group,
                             bool async_op) {
  const Group g = resolve(group, "reduce");
  return finish(g->reduce(tensor, group_rank_of(g, dst, "reduce"), op), async_op);
}

std::shared_ptr<Work> all_gather(const std::vector<Tensor>& tensor_list, const Tensor& tensor,
                                 const Group& group, bool async_op) {
  return finish(resolve(group, "all_gather")->all_gather(tensor_list, tensor), async_op);
}

std::shared_ptr<Work> all_gather_into_tensor(const Tensor& output, const Tensor& input,
                                             const Group& group, bool async_op) {
  return finish(resolve(group, "all_gather_into_tensor")->all_gather_into_tensor(output, input),
                async_op);
}

std::shared_ptr<Work> gather(const Tensor& tensor, const std::vector<Tensor>& gather_list, int dst,
                             const Group& group, bool async_op) {
  const Group g = resolve(group, "gather");
  return finish(g->gather(gather_list, tensor, group_rank_of(g, dst, "gather")), async_op);
}

std::shared_ptr<Work> scatter(const Tensor& tensor, const std::vector<Tensor>& scatter_list,
                              int src, const Group& group, bool async_op) {
  const Group g = resolve(group, "scatter");
  return finish(g->scatter(tensor, scatter_list, group_rank_of(g, src, "scatter")), async_op);
}

std::shared_ptr<Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& input_list,
                                     ReduceOp op, const Group& group, bool async_op) {
  return finish(resolve(group, "reduce_scatter")->reduce_scatter(output, input_list, op), async_op);
}

std::shared_ptr<Work> reduce_scatter_tensor(const Tensor& output, const Tensor& input, ReduceOp op,
                                            const Group& group, bool async_op) {
  return finish(resolve(group, "reduce_scatter_tensor")->reduce_scatter_tensor(output, input, op),
                async_op);
}

std::shared_ptr<Work> all_to_all_single(const Tensor& output, const Tensor& input,
                                        std::vector<int64_t> output_split_sizes,
                                        std::vector<int64_t> input_split_sizes, const Group& group,
                                        bool async_op) {
  return finish(resolve(group, "all_to_all_single")
                    ->all_to_all_single(output, input, std::move(output_split_sizes),
                                        std::move(input_split_sizes)),
                async_op);
}

std::shared_ptr<Work> all_to_all(const std::vector<Tensor>& output_tensor_list,
                                 const std::vector<Tensor>& input_tensor_list, const Group& group,
                                 bool async_op) {
  return finish(resolve(group, "all_to_all")->all_to_all(output_tensor_list, input_tensor_list),
                async_op);
}

std::shared_ptr<Work> barrier(const Group& group, bool async_op) {
  return finish(resolve(group, "barrier")->barrier(), async_op);
}

std::shared_ptr<Work> isend(const Tensor& tensor, int dst, const Group& group, int tag) {
  const Group g = resolve(group, "isend");
  return g->send(tensor, group_rank_of(g, dst, "isend"), tag);
}

std::shared_ptr<Work> irecv(const Tensor& tensor, int src, const Group& group, int tag) {
  const Group g = resolve(group, "irecv");
  return g->recv(tensor, src < 0 ? -1 : group_rank_of(g, src, "irecv"), tag);
}

void send(const Tensor& tensor, int dst, const Group& group, int tag) {
  isend(tensor, dst, group, tag)->wait();
}

int recv(const Tensor& tensor, int src, const Group& group, int tag) {
  const Group g = resolve(group, "recv");
  const std::shared_ptr<Work> work = irecv(tensor, src, g, tag);
  work->wait();
  return get_global_rank(g, work->source_rank());
}

std::vector<std::shared_ptr<Work>> batch_isend_irecv(const std::vector<P2POp>& ops) {
  std::vector<std::shared_ptr<Work>> works;
  for (const P2POp& op : ops)
    works.push_back(op.kind == P2POp::ISend ? isend(op.tensor, op.peer, op.group, op.tag)
                                            : irecv(op.tensor, op.peer, op.group, op.tag));
  return works;
}

}  // namespace kiln::distributed
