#include "kiln/distributed/tcp_store_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <exception>
#include <iterator>
#include <system_error>
#include <utility>

#include "kiln/core/error.h"

namespace kiln::distributed::net {

using std::chrono::milliseconds;

TCPStoreServer::TCPStoreServer(uint16_t port) : listener_(listen_on_every_interface(port)) {
  port_ = local_port(listener_.get());
  int pipe_fds[2];
  KILN_CHECK(::pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) == 0,
             "TCPStore: pipe2 failed: ", error_text(errno));
  stop_read_.reset(pipe_fds[0]);
  stop_write_.reset(pipe_fds[1]);
  thread_ = std::thread([this] { run(); });
}

TCPStoreServer::~TCPStoreServer() {
  const uint8_t stop = 1;
  while (::write(stop_write_.get(), &stop, 1) < 0 && errno == EINTR) {
  }
  thread_.join();
}

void TCPStoreServer::run() {
  try {
    serve_until_stopped();
  } catch (const std::exception&) {
    // Out of memory or the like: closing every connection below lets clients fail fast.
  }
  clients_.clear();
}

void TCPStoreServer::serve_until_stopped() {
  std::vector<pollfd> polled;
  while (true) {
    polled.clear();
    polled.push_back({stop_read_.get(), POLLIN, 0});
    if (accept_paused_until_ && Clock::now() >= *accept_paused_until_) accept_paused_until_.reset();
    polled.push_back({listener_.get(), static_cast<short>(accept_paused_until_ ? 0 : POLLIN), 0});
    for (const auto& [fd, client] : clients_)
      polled.push_back({fd, static_cast<short>(POLLIN | (client.out.empty() ? 0 : POLLOUT)), 0});
    if (::poll(polled.data(), polled.size(), poll_timeout()) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (polled[0].revents != 0) return;
    if (polled[1].revents & POLLIN) accept_clients();
    for (size_t i = 2; i < polled.size(); ++i) {
      Client& client = clients_.at(polled[i].fd);
      if (polled[i].revents & (POLLIN | POLLHUP | POLLERR)) receive(client);
      if (polled[i].revents & POLLOUT) send_replies(client);
    }
    serve_received_requests();
    expire_waiters();
    for (auto it = clients_.begin(); it != clients_.end();) {
      if (!it->second.closed && !it->second.out.empty()) send_replies(it->second);
      it = it->second.closed ? clients_.erase(it) : std::next(it);
    }
  }
}

int TCPStoreServer::poll_timeout() const {
  std::optional<Clock::time_point> earliest = accept_paused_until_;
  for (const auto& [fd, client] : clients_)
    if (client.waiter && (!earliest || client.waiter->deadline < *earliest))
      earliest = client.waiter->deadline;
  return earliest ? poll_timeout_until(*earliest) : -1;
}

void TCPStoreServer::accept_clients() {
  while (true) {
    const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // Out of descriptors or memory: the connection stays in the backlog, and the listener
      // stays readable, so polling it again at once would spin. Retry after a pause instead.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        accept_paused_until_ = Clock::now() + kAcceptRetryPause;
      return;  // EAGAIN once the backlog is empty
    }
    set_no_delay(fd);
    clients_[fd].fd.reset(fd);
  }
}

void TCPStoreServer::receive(Client& client) {
  uint8_t buffer[64 * 1024];
  while (true) {
    const ssize_t received = ::recv(client.fd.get(), buffer, sizeof(buffer), 0);
    if (received > 0) {
      client.in.insert(client.in.end(), buffer, buffer + received);
    } else if (received < 0 && errno == EINTR) {
      continue;
    } else {
      // 0: the client hung up; EAGAIN: nothing more for now; anything else: a dead peer.
      if (received == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) client.closed = true;
      return;
    }
  }
}

void TCPStoreServer::send_replies(Client& client) {
  size_t sent_total = 0;
  while (sent_total < client.out.size()) {
    const ssize_t sent = ::send(client.fd.get(), client.out.data() + sent_total,
                                client.out.size() - sent_total, MSG_NOSIGNAL);
    if (sent > 0) {
      sent_total += sent;
    } else if (sent < 0 && errno == EINTR) {
      continue;
    } else {
      if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK) client.closed = true;
      break;
    }
  }
  client.out.erase(client.out.begin(), client.out.begin() + sent_total);
}

// Serves every complete request of every client not parked on a waiter. Serving one client
// can release another's waiter, whose later requests then get served on the next pass.
void TCPStoreServer::serve_received_requests() {
  bool served = true;
  while (served) {
    served = false;
    for (auto& [fd, client] : clients_) {
      size_t consumed = 0;
      while (!client.closed && !client.waiter && client.in.size() - consumed >= 4) {
        const size_t size = read_little_endian(client.in.data() + consumed, 4);
        if (size > kMaxFrameBytes) {
          client.closed = true;
          break;
        }
        if (client.in.size() - consumed - 4 < size) break;
        try {
          FrameReader request(client.in.data() + consumed + 4, size);
          serve(client, request);
        } catch (const Error&) {
          client.closed = true;  // a malformed request: the client does not speak this protocol
        }
        consumed += 4 + size;
        served = true;
      }
      client.in.erase(client.in.begin(), client.in.begin() + consumed);
    }
  }
}

void TCPStoreServer::reply(Client& client, FrameWriter& frame) {
  const std::vector<uint8_t> bytes = frame.finish();
  client.out.insert(client.out.end(), bytes.begin(), bytes.end());
}

void TCPStoreServer::serve(Client& client, FrameReader& request) {
  const auto op = static_cast<Op>(request.u8());
  switch (op) {
    case Op::kSet: {
      std::string key = request.str();
      entries_[std::move(key)] = request.bytes();
      reply(client, FrameWriter().status(Status::kOk));
      answer_ready_waiters();
      return;
    }
    case Op::kGet: {
      std::string key = request.str();
      const milliseconds timeout(request.i64());
      park_or_answer(client, Waiter{op, {std::move(key)}, deadline_after(timeout)});
      return;
    }
    case Op::kAdd: {
      const std::string key = request.str();
      const int64_t amount = request.i64();
      add(client, key, amount);
      return;
    }
    case Op::kCompareSet: {
      const std::string key = request.str();
      const std::vector<uint8_t> expected = request.bytes();
      std::vector<uint8_t> desired = request.bytes();
      compare_set(client, key, expected, std::move(desired));
      return;
    }
    case Op::kDeleteKey: {
      const bool existed = entries_.erase(request.str()) > 0;
      reply(client, FrameWriter().status(Status::kOk).u8(existed));
      return;
    }
    case Op::kCheck: {
      const std::vector<std::string> keys = request.strs();
      reply(client, FrameWriter().status(Status::kOk).u8(missing_keys(keys).empty()));
      return;
    }
    case Op::kWait: {
      std::vector<std::string> keys = request.strs();
      const milliseconds timeout(request.i64());
      park_or_answer(client, Waiter{op, std::move(keys), deadline_after(timeout)});
      return;
    }
    case Op::kNumKeys: {
      const auto user_keys = std::count_if(entries_.begin(), entries_.end(), [](const auto& entry) {
        return !entry.first.starts_with(kInternalKeyPrefix);
      });
      reply(client, FrameWriter().status(Status::kOk).i64(user_keys));
      return;
    }
  }
  KILN_FAIL("TCPStore: unknown request ", static_cast<int>(op));
}

void TCPStoreServer::add(Client& client, const std::string& key, int64_t amount) {
  int64_t value = 0;
  if (const auto it = entries_.find(key); it != entries_.end()) {
    const char* begin = reinterpret_cast<const char*>(it->second.data());
    const char* end = begin + it->second.size();
    const auto [parsed_end, error] = std::from_chars(begin, end, value);
    if (error != std::errc() || parsed_end != end || begin == end) {
      reply(client, FrameWriter()
                        .status(Status::kError)
                        .str(detail::str_cat("key \"", key, "\" holds \"", std::string(begin, end),
                                             "\", which is not a counter (a decimal integer)")));
      return;
    }
  }
  if (__builtin_add_overflow(value, amount, &value)) {
    reply(client, FrameWriter()
                      .status(Status::kError)
                      .str(detail::str_cat("adding ", amount, " to the counter at key \"", key,
                                           "\" overflows int64")));
    return;
  }
  const std::string text = std::to_string(value);
  entries_[key].assign(text.begin(), text.end());
  reply(client, FrameWriter().status(Status::kOk).i64(value));
  answer_ready_waiters();
}

void TCPStoreServer::compare_set(Client& client, const std::string& key,
                                 const std::vector<uint8_t>& expected,
                                 std::vector<uint8_t> desired) {
  const auto it = entries_.find(key);
  const bool swap = it == entries_.end() ? expected.empty() : it->second == expected;
  if (!swap) {
    // The value after the call: the current one, or none for a missing key.
    reply(client, FrameWriter()
                      .status(Status::kOk)
                      .bytes(it == entries_.end() ? std::vector<uint8_t>() : it->second));
    return;
  }
  reply(client, FrameWriter().status(Status::kOk).bytes(desired));
  entries_[key] = std::move(desired);
  answer_ready_waiters();
}

std::vector<std::string> TCPStoreServer::missing_keys(const std::vector<std::string>& keys) const {
  std::vector<std::string> missing;
  for (const std::string& key : keys)
    if (!entries_.contains(key)) missing.push_back(key);
  return missing;
}

void TCPStoreServer::answer(Client& client, const Waiter& waiter) {
  if (waiter.op == Op::kGet)
    reply(client, FrameWriter().status(Status::kOk).bytes(entries_.at(waiter.keys[0])));
  else
    reply(client, FrameWriter().status(Status::kOk));
}

void TCPStoreServer::park_or_answer(Client& client, Waiter waiter) {
  if (missing_keys(waiter.keys).empty())
    answer(client, waiter);
  else
    client.waiter = std::move(waiter);
}

void TCPStoreServer::answer_ready_waiters() {
  for (auto& [fd, client] : clients_) {
    if (client.waiter && missing_keys(client.waiter->keys).empty()) {
      answer(client, *client.waiter);
      client.waiter.reset();
    }
  }
}

void TCPStoreServer::expire_waiters() {
  const auto now = Clock::now();
  for (auto& [fd, client] : clients_) {
    if (client.waiter && client.waiter->deadline <= now) {
      reply(client, FrameWriter().status(Status::kTimeout).strs(missing_keys(client.waiter->keys)));
      client.waiter.reset();
    }
  }
}

}  // namespace kiln::distributed::net
