#include "kiln/distributed/process_group.h"

#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>

#include "kiln/core/error.h"
#include "kiln/core/tensor_impl.h"
#include "kiln/distributed/process_group_impl.h"

namespace kiln::distributed {
namespace {

// Gloo's rendezvous through a Kiln store.
class GlooStore : public gloo::rendezvous::Store {
 public:
  explicit GlooStore(std::shared_ptr<distributed::Store> store) : store_(std::move(store)) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set(key, std::vector<uint8_t>(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    const std::vector<uint8_t> v = store_->get(key);
    return {v.begin(), v.end()};
  }
  void wait(const std::vector<std::string>& keys) override { store_->wait(keys); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    store_->wait(keys, timeout);
  }

 private:
  std::shared_ptr<distributed::Store> store_;
};

std::shared_ptr<gloo::transport::Device> make_device(const ProcessGroup::Options& o) {
  gloo::transport::tcp::attr attr;
  const char* iface = std::getenv("GLOO_SOCKET_IFNAME");
  if (iface && *iface) {
    attr.iface = iface;
  } else if (!o.hostname.empty()) {
    attr.hostname = o.hostname;
  } else if (o.loopback) {
    attr.hostname = "127.0.0.1";
  } else {
    std::array<char, 256> name{};
    gethostname(name.data(), name.size() - 1);
    attr.hostname = name.data();
  }
  return gloo::transport::tcp::CreateDevice(attr);
}

}  // namespace

SigpipeBlocked::SigpipeBlocked() { pthread_sigmask(SIG_BLOCK, &sigpipe(), &old_); }

SigpipeBlocked::~SigpipeBlocked() {
  if (!sigismember(&old_, SIGPIPE)) {  // drop a SIGPIPE raised meanwhile before unblocking
    const timespec now{};
    while (sigtimedwait(&sigpipe(), nullptr, &now) > 0) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

const sigset_t& SigpipeBlocked::sigpipe() {
  static const sigset_t set = [] {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    return s;
  }();
  return set;
}

TaskQueue& ProcessGroup::Impl::transfer_queue(bool sending, int peer, int tag) {
  std::lock_guard lock(transfer_mutex);
  std::unique_ptr<TaskQueue>& q = transfer_queues[{sending, peer, tag}];
  if (!q) {
    const SigpipeBlocked sigpipe_blocked;  // the queue's thread inherits the mask
    q = std::make_unique<TaskQueue>(where());
  }
  return *q;
}

std::shared_ptr<gloo::transport::UnboundBuffer> ProcessGroup::Impl::post_buffer(void* data,
                                                                                size_t bytes) {
  std::shared_ptr<gloo::transport::UnboundBuffer> buffer =
      context->createUnboundBuffer(data, bytes);
  std::lock_guard lock(posted_mutex);
  if (transfers_aborted) {  // posted by a transfer that was already running
    buffer->abortWaitRecv();
    buffer->abortWaitSend();
  }
  std::erase_if(posted, [](const auto& b) { return b.expired(); });
  posted.push_back(buffer);
  return buffer;
}

void ProcessGroup::Impl::abort_transfers() {
  std::lock_guard lock(posted_mutex);
  transfers_aborted = true;
  for (const auto& weak : posted)
    if (const auto buffer = weak.lock()) {
      buffer->abortWaitRecv();
      buffer->abortWaitSend();
    }
}

CollectiveCall CollectiveCall::of(CollectiveKind kind, const Tensor& t, int root) {
  return {kind, -1, static_cast<int64_t>(t.dtype()), t.numel(), root};
}

CollectiveCall CollectiveCall::of(CollectiveKind kind, const Tensor& t, ReduceOp op, int root) {
  CollectiveCall c = of(kind, t, root);
  c.reduce_op = static_cast<int64_t>(op);
  return c;
}

DenseBuffer::DenseBuffer(const Tensor& t)
    : original(t), dense(t.is_contiguous() ? t : t.contiguous()) {}

void DenseBuffer::write_back() const {
  if (!dense.is_same(original)) original.copy_(dense);
}

std::string ProcessGroup::Impl::where() const {
  return "group '" + options.name + "' (rank " + std::to_string(rank) + " of " +
         std::to_string(size) + ")";
}

std::shared_ptr<Work> ProcessGroup::Impl::enqueue(const char* what,
                                                  const std::vector<Tensor>& inputs,
                                                  const std::vector<Tensor>& outputs,
                                                  std::function<void(uint32_t)> fn) {
  // The worker reads and writes these without waiting for pending writes (a functional
  // collective's result, perhaps of another group): settle them first.
  for (const auto* tensors : {&inputs, &outputs})
    for (const Tensor& t : *tensors)
      if (t.defined()) t.impl()->storage()->wait_for_pending_write();
  std::lock_guard lock(tag_mutex);
  const uint32_t tag = next_tag;
  next_tag += 4;  // the agreement check, one more exchange of sizes, and two of data
  const uint64_t id = FlightRecorder::get().record(recorded(), ++collective_seq, 0, what,
                                                   summarize(inputs), summarize(outputs));
  return collectives->push(what, [this, fn = std::move(fn), tag, id, what] {
    run_recorded(id, what, [&] { fn(tag); });
  });
}

uint64_t ProcessGroup::Impl::record_p2p(std::string op, const Tensor& t) {
  int64_t seq;
  {
    std::lock_guard lock(tag_mutex);
    seq = ++p2p_seq;
  }
  return FlightRecorder::get().record(recorded(), 0, seq, std::move(op), summarize({t}), {});
}

void ProcessGroup::Impl::run_recorded(uint64_t id, const char* what,
                                      const std::function<void()>& fn) const {
  FlightRecorder& recorder = FlightRecorder::get();
  recorder.started(id);
  std::string message;
  try {
    fn();
    recorder.finished(id, "");
    return;
  } catch (const Error& e) {
    message = e.what();
  } catch (const std::exception& e) {
    message = std::string(what) + " on " + where() + " failed: " + e.what();
  }
  recorder.finished(id, message);
  const std::string path = recorder.dump(message);
  if (!path.empty())
    message += " (flight recorder written to " + path + "; run `kiln fr` on its directory)";
  throw Error(message);
}

void ProcessGroup::Impl::check_tensor(const char* what, const Tensor& t) const {
  KILN_CHECK(t.defined(), what, ": the tensor is undefined");
  KILN_CHECK(t.device().is_cpu(), what, ": ", where(),
             " runs Gloo, which takes CPU tensors; got a tensor on ", t.device(),
             " (NCCL groups for CUDA tensors are not built yet)");
}

void ProcessGroup::Impl::check_rank(const char* what, const char* role, int r) const {
  KILN_CHECK(r >= 0 && r < size, what, ": ", role, " ", r, " is not a rank of ", where());
}

void ProcessGroup::Impl::check_same(const char* what, const Tensor& t, const Tensor& like) const {
  check_tensor(what, t);
  KILN_CHECK(t.dtype() == like.dtype() && t.numel() == like.numel(), what,
             ": every tensor must have the dtype and element count of ", like.sizes(), " ",
             like.dtype(), "; got ", t.sizes(), " ", t.dtype());
}

ProcessGroup::ProcessGroup(std::shared_ptr<Store> store, int rank, int size, Options options)
    : impl_(std::make_unique<Impl>()) {
  KILN_CHECK(size >= 1 && rank >= 0 && rank < size, "ProcessGroup: rank ", rank, " is not in [0, ",
             size, ")");
  KILN_CHECK(store != nullptr, "ProcessGroup: the store is null");
  Impl& g = *impl_;
  g.rank = rank;
  g.size = size;
  g.options = std::move(options);
  const SigpipeBlocked sigpipe_blocked;
  const uint64_t id = FlightRecorder::get().record(g.recorded(), 0, 0, "connect", {}, {});
  g.run_recorded(id, "connect", [&] {
    try {
      GlooStore gloo_store(store);
      auto device = make_device(g.options);
      g.context = std::make_shared<gloo::rendezvous::Context>(rank, size);
      g.context->setTimeout(g.options.timeout);
      g.context->connectFullMesh(gloo_store, device);
      // A rank's connect returns once its own pairs are up, while a peer may still be reading
      // the handshake of a pair they share; a rank that then did its work and exited would
      // close that pair under the peer. So no rank leaves until every rank has connected
      // (c10d's store-based barrier).
      if (store->add("connected", 1) == size) store->set("all_connected", "1");
      store->wait({"all_connected"}, g.options.timeout);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      KILN_FAIL("ProcessGroup: ", g.where(), " could not connect to its peers: ", e.what());
    }
  });
  g.collectives = std::make_unique<TaskQueue>(g.where());
}

ProcessGroup::~ProcessGroup() {
  impl_->abort_transfers();
  // Collectives still queued (an asynchronous result nobody used) run now, while everything
  // they use is alive: members are destroyed in reverse order, the queue's thread would not be.
  impl_->collectives.reset();
}

int ProcessGroup::rank() const { return impl_->rank; }
int ProcessGroup::size() const { return impl_->size; }
const std::string& ProcessGroup::name() const { return impl_->options.name; }
std::chrono::milliseconds ProcessGroup::timeout() const { return impl_->options.timeout; }

}  // namespace kiln::distributed
