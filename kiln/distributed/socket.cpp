#include "kiln/distributed/socket.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <system_error>
#include <thread>
#include <utility>

#include "kiln/core/error.h"

namespace kiln::distributed::net {

using std::chrono::milliseconds;

UniqueFd::UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) reset(std::exchange(other.fd_, -1));
  return *this;
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::string error_text(int error) {
  return std::error_code(error, std::system_category()).message();
}

Clock::time_point deadline_after(milliseconds timeout) {
  if (timeout > std::chrono::hours(24 * 365 * 10)) return Clock::time_point::max();
  return Clock::now() + std::max(timeout, milliseconds(0));
}

int poll_timeout_until(Clock::time_point deadline) {
  const auto now = Clock::now();
  if (deadline <= now) return 0;
  const auto left = std::chrono::ceil<milliseconds>(deadline - now).count();
  return static_cast<int>(std::min<int64_t>(left, INT_MAX));
}

int poll_until(int fd, short events, Clock::time_point deadline) {
  pollfd polled{fd, events, 0};
  int ready;
  while ((ready = ::poll(&polled, 1, poll_timeout_until(deadline))) < 0 && errno == EINTR) {
  }
  return ready;
}

void set_no_delay(int fd) {
  const int on = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
}

UniqueFd listen_on_every_interface(uint16_t port) {
  int ipv6_error = 0;
  if (UniqueFd fd(::socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)); fd) {
    const int off = 0, on = 1;
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_addr = in6addr_any;
    address.sin6_port = htons(port);
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
        ::listen(fd.get(), SOMAXCONN) == 0)
      return fd;
    ipv6_error = errno;
  } else {
    ipv6_error = errno;
  }
  KILN_CHECK(ipv6_error == EAFNOSUPPORT || ipv6_error == EADDRNOTAVAIL,
             "TCPStore: cannot listen on port ", port, ": ", error_text(ipv6_error));
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  KILN_CHECK(fd, "TCPStore: cannot create a socket: ", error_text(errno));
  const int on = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(port);
  KILN_CHECK(::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                 ::listen(fd.get(), SOMAXCONN) == 0,
             "TCPStore: cannot listen on port ", port, ": ", error_text(errno));
  return fd;
}

uint16_t local_port(int fd) {
  sockaddr_storage address{};
  socklen_t size = sizeof(address);
  KILN_CHECK(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0,
             "TCPStore: getsockname failed: ", error_text(errno));
  if (address.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
}

namespace {

// Whether a socket is connected to itself, which TCP allows when a client connects to a port of
// its own host that nothing listens on and the kernel picks that very port as the source port.
bool connected_to_itself(int fd) {
  sockaddr_storage local{}, peer{};
  socklen_t local_size = sizeof(local), peer_size = sizeof(peer);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_size) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0)
    return false;
  return local_size == peer_size && std::memcmp(&local, &peer, local_size) == 0;
}

// A connected non-blocking socket to address, or an empty one with the reason in error.
UniqueFd try_connect(const addrinfo& address, Clock::time_point deadline, std::string& error) {
  UniqueFd fd(
      ::socket(address.ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, address.ai_protocol));
  if (!fd) {
    error = error_text(errno);
    return {};
  }
  if (::connect(fd.get(), address.ai_addr, address.ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      error = error_text(errno);
      return {};
    }
    if (poll_until(fd.get(), POLLOUT, deadline) <= 0) {
      error = "the connection attempt timed out";
      return {};
    }
    int socket_error = 0;
    socklen_t size = sizeof(socket_error);
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &socket_error, &size);
    if (socket_error != 0) {
      error = error_text(socket_error);
      return {};
    }
  }
  if (connected_to_itself(fd.get())) {
    error = "Connection refused";
    return {};
  }
  set_no_delay(fd.get());
  return fd;
}

}  // namespace

UniqueFd connect_with_retry(const std::string& host, uint16_t port, milliseconds timeout) {
  const auto deadline = deadline_after(timeout);
  const std::string service = std::to_string(port);
  std::string error = "no address to try";
  milliseconds backoff{5};
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* addresses = nullptr;
    const int resolved = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &addresses);
    if (resolved == 0) {
      for (const addrinfo* address = addresses; address; address = address->ai_next) {
        if (UniqueFd fd = try_connect(*address, deadline, error); fd) {
          ::freeaddrinfo(addresses);
          return fd;
        }
      }
      ::freeaddrinfo(addresses);
    } else {
      error = ::gai_strerror(resolved);
      KILN_CHECK(resolved == EAI_AGAIN, "TCPStore: cannot resolve host \"", host, "\": ", error);
    }
    const auto now = Clock::now();
    KILN_CHECK(now < deadline, "TCPStore: could not connect to store ", host, ":", port, " within ",
               timeout.count(), " ms (", error, ")");
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - now));
    backoff = std::min(backoff * 2, milliseconds(100));
  }
}

}  // namespace kiln::distributed::net
