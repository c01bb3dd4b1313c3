#pragma once
// The POSIX socket helpers that TCPStore's server and client share. Sockets are non-blocking;
// blocking is done with poll() against a deadline.
#include <chrono>
#include <cstdint>
#include <string>

namespace kiln::distributed::net {

using Clock = std::chrono::steady_clock;

// Owns a file descriptor and closes it.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept;
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

std::string error_text(int error);

// The deadline timeout from now; a timeout of over ten years never passes.
Clock::time_point deadline_after(std::chrono::milliseconds timeout);
// poll()'s timeout argument for a deadline, rounded up so that poll does not wake just before it.
int poll_timeout_until(Clock::time_point deadline);
// poll() on one socket for events until deadline, retried on EINTR: poll's result (errno is set
// when it is negative).
int poll_until(int fd, short events, Clock::time_point deadline);

void set_no_delay(int fd);
// A listening socket on port of every interface: dual-stack IPv6, or IPv4 on hosts without IPv6.
UniqueFd listen_on_every_interface(uint16_t port);
// The port a socket is bound to.
uint16_t local_port(int fd);
// A connected non-blocking socket to host:port, retrying until timeout as the server may start
// later; throws kiln::Error when timeout passes first or host cannot be resolved.
UniqueFd connect_with_retry(const std::string& host, uint16_t port,
                            std::chrono::milliseconds timeout);

}  // namespace kiln::distributed::net
