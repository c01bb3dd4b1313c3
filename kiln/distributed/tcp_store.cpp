#include "kiln/distributed/tcp_store.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <mutex>
#include <string_view>
#include <utility>

#include "kiln/core/error.h"
#include "kiln/distributed/socket.h"
#include "kiln/distributed/tcp_store_server.h"
#include "kiln/distributed/tcp_store_wire.h"

namespace kiln::distributed {
namespace {

using net::Clock;
using net::FrameReader;
using net::FrameWriter;
using net::Op;
using net::Status;
using std::chrono::milliseconds;

// How much longer than its timeout a client waits for the reply to get or wait before it gives
// up on the server.
constexpr milliseconds kReplyGrace{1000};

milliseconds with_reply_grace(milliseconds timeout) {
  return timeout > std::chrono::hours(24 * 365) ? timeout : timeout + kReplyGrace;
}

std::string key_phrase(const std::vector<std::string>& keys) {
  return detail::str_cat(keys.size() == 1 ? "key " : "keys ", quoted_keys(keys),
                         keys.size() == 1 ? " was" : " were");
}

}  // namespace

// A client's connection: one request at a time, each waiting for its reply. A connection that
// failed (the server went away, or a reply did not come in time) stays failed.
class TCPStore::Connection {
 public:
  Connection(const std::string& host, uint16_t port, milliseconds timeout)
      : address_(detail::str_cat(host, ":", port)),
        fd_(net::connect_with_retry(host, port, timeout)) {}

  // The body of the reply to request (a whole frame), which must come within reply_timeout.
  std::vector<uint8_t> call(std::string_view method, const std::vector<uint8_t>& request,
                            milliseconds reply_timeout) {
    std::lock_guard lock(mutex_);
    KILN_CHECK(failure_.empty(), method, ": the connection to store ", address_,
               " failed earlier (", failure_, ")");
    const auto deadline = net::deadline_after(reply_timeout);
    try {
      send_all(request.data(), request.size(), deadline);
      uint8_t header[4];
      receive_exactly(header, sizeof(header), deadline);
      const size_t size = net::read_little_endian(header, 4);
      if (size > net::kMaxFrameBytes) throw Failure{"a malformed reply"};
      std::vector<uint8_t> body(size);
      receive_exactly(body.data(), size, deadline);
      return body;
    } catch (const Failure& failure) {
      failure_ = failure.reason == kNoReply
                     ? detail::str_cat("no reply within ", reply_timeout.count(), " ms")
                     : failure.reason;
      fd_.reset();
      KILN_FAIL(method, ": lost the connection to store ", address_, ": ", failure_);
    }
  }

 private:
  struct Failure {
    std::string reason;
  };
  static constexpr std::string_view kNoReply = "no reply";

  void await(short events, Clock::time_point deadline) {
    const int ready = net::poll_until(fd_.get(), events, deadline);
    if (ready < 0) throw Failure{net::error_text(errno)};
    if (ready == 0) throw Failure{std::string(kNoReply)};
  }

  void send_all(const uint8_t* data, size_t size, Clock::time_point deadline) {
    while (size > 0) {
      const ssize_t sent = ::send(fd_.get(), data, size, MSG_NOSIGNAL);
      if (sent > 0) {
        data += sent;
        size -= sent;
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        await(POLLOUT, deadline);
      } else if (errno != EINTR) {
        throw Failure{net::error_text(errno)};
      }
    }
  }

  void receive_exactly(uint8_t* data, size_t size, Clock::time_point deadline) {
    while (size > 0) {
      const ssize_t received = ::recv(fd_.get(), data, size, 0);
      if (received > 0) {
        data += received;
        size -= received;
      } else if (received == 0) {
        throw Failure{"the store closed the connection"};
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        await(POLLIN, deadline);
      } else if (errno != EINTR) {
        throw Failure{net::error_text(errno)};
      }
    }
  }

  std::string address_;
  std::mutex mutex_;
  net::UniqueFd fd_;
  std::string failure_;  // why the connection failed; empty while it works
};

TCPStore::TCPStore(std::string host, uint16_t port, std::optional<int> world_size, bool is_master,
                   milliseconds timeout, bool wait_for_workers)
    : Store(timeout), host_(std::move(host)), port_(port) {
  KILN_CHECK(!world_size || *world_size > 0, "TCPStore: world_size must be positive, got ",
             *world_size);
  KILN_CHECK(is_master || port != 0, "TCPStore: a worker needs the master's port, got 0 (store ",
             host_, ")");
  if (is_master) {
    server_ = std::make_unique<net::TCPStoreServer>(port);
    port_ = server_->port();
  }
  connection_ = std::make_unique<Connection>(host_, port_, timeout);
  const int64_t joined = add(net::kJoinedKey, 1);
  if (world_size && wait_for_workers) {
    if (joined >= *world_size) set(net::kAllJoinedKey, "1");
    this->wait_for_workers(*world_size, timeout);
  }
}

TCPStore::~TCPStore() = default;

std::string TCPStore::address() const { return detail::str_cat(host_, ":", port_); }

void TCPStore::wait_for_workers(int world_size, milliseconds timeout) {
  const std::vector<uint8_t> request =
      FrameWriter().op(Op::kWait).strs({net::kAllJoinedKey}).i64(timeout.count()).finish();
  const std::vector<uint8_t> body =
      connection_->call("TCPStore", request, with_reply_grace(timeout));
  if (static_cast<Status>(FrameReader(body).u8()) == Status::kOk) return;
  KILN_FAIL("TCPStore: only ", add(net::kJoinedKey, 0), " of ", world_size,
            " workers joined within ", timeout.count(), " ms (store ", address(), ")");
}

void TCPStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  connection_->call("TCPStore::set", FrameWriter().op(Op::kSet).str(key).bytes(value).finish(),
                    timeout());
}

std::vector<uint8_t> TCPStore::get(const std::string& key) {
  const milliseconds timeout = this->timeout();
  const std::vector<uint8_t> body = connection_->call(
      "TCPStore::get", FrameWriter().op(Op::kGet).str(key).i64(timeout.count()).finish(),
      with_reply_grace(timeout));
  FrameReader reply(body);
  KILN_CHECK(static_cast<Status>(reply.u8()) == Status::kOk, "TCPStore::get: key \"", key,
             "\" was not set within ", timeout.count(), " ms (store ", address(), ")");
  return reply.bytes();
}

int64_t TCPStore::add(const std::string& key, int64_t amount) {
  const std::vector<uint8_t> body = connection_->call(
      "TCPStore::add", FrameWriter().op(Op::kAdd).str(key).i64(amount).finish(), timeout());
  FrameReader reply(body);
  if (static_cast<Status>(reply.u8()) == Status::kOk) return reply.i64();
  KILN_FAIL("TCPStore::add: ", reply.str(), " (store ", address(), ")");
}

std::vector<uint8_t> TCPStore::compare_set(const std::string& key,
                                           const std::vector<uint8_t>& expected,
                                           const std::vector<uint8_t>& desired) {
  const std::vector<uint8_t> body = connection_->call(
      "TCPStore::compare_set",
      FrameWriter().op(Op::kCompareSet).str(key).bytes(expected).bytes(desired).finish(),
      timeout());
  FrameReader reply(body);
  reply.u8();
  return reply.bytes();
}

bool TCPStore::delete_key(const std::string& key) {
  const std::vector<uint8_t> body = connection_->call(
      "TCPStore::delete_key", FrameWriter().op(Op::kDeleteKey).str(key).finish(), timeout());
  FrameReader reply(body);
  reply.u8();
  return reply.u8() != 0;
}

bool TCPStore::check(const std::vector<std::string>& keys) {
  const std::vector<uint8_t> body = connection_->call(
      "TCPStore::check", FrameWriter().op(Op::kCheck).strs(keys).finish(), timeout());
  FrameReader reply(body);
  reply.u8();
  return reply.u8() != 0;
}

void TCPStore::wait(const std::vector<std::string>& keys, milliseconds timeout) {
  const std::vector<uint8_t> body = connection_->call(
      "TCPStore::wait", FrameWriter().op(Op::kWait).strs(keys).i64(timeout.count()).finish(),
      with_reply_grace(timeout));
  FrameReader reply(body);
  if (static_cast<Status>(reply.u8()) == Status::kOk) return;
  KILN_FAIL("TCPStore::wait: ", key_phrase(reply.strs()), " not set within ", timeout.count(),
            " ms (waited for ", quoted_keys(keys), "; store ", address(), ")");
}

int64_t TCPStore::num_keys() {
  const std::vector<uint8_t> body =
      connection_->call("TCPStore::num_keys", FrameWriter().op(Op::kNumKeys).finish(), timeout());
  FrameReader reply(body);
  reply.u8();
  return reply.i64();
}

}  // namespace kiln::distributed
