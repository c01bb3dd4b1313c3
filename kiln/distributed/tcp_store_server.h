#pragma once
// The server behind TCPStore: one thread that poll()s the listening socket, its clients and a
// pipe that asks it to stop. Requests are served in order per client; a get or wait whose keys
// are missing parks the client (no more of its requests are read) until the keys are set or its
// deadline passes.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "kiln/distributed/socket.h"
#include "kiln/distributed/tcp_store_wire.h"

namespace kiln::distributed::net {

class TCPStoreServer {
 public:
  static constexpr std::chrono::milliseconds kAcceptRetryPause{50};

  // Listens on port of every interface (port 0: one the OS picks, see port()) and starts serving.
  explicit TCPStoreServer(uint16_t port);
  // Stops the thread; every client connection closes.
  ~TCPStoreServer();

  uint16_t port() const { return port_; }

 private:
  struct Waiter {
    Op op;  // kGet or kWait
    std::vector<std::string> keys;
    Clock::time_point deadline;
  };
  struct Client {
    UniqueFd fd;
    std::vector<uint8_t> in;   // bytes received and not yet served
    std::vector<uint8_t> out;  // bytes of replies not yet sent
    std::optional<Waiter> waiter;
    bool closed = false;
  };

  void run();
  void serve_until_stopped();
  int poll_timeout() const;
  void accept_clients();
  void receive(Client& client);
  void send_replies(Client& client);
  void serve_received_requests();
  static void reply(Client& client, FrameWriter& frame);
  void serve(Client& client, FrameReader& request);
  void add(Client& client, const std::string& key, int64_t amount);
  void compare_set(Client& client, const std::string& key, const std::vector<uint8_t>& expected,
                   std::vector<uint8_t> desired);
  std::vector<std::string> missing_keys(const std::vector<std::string>& keys) const;
  void answer(Client& client, const Waiter& waiter);
  void park_or_answer(Client& client, Waiter waiter);
  void answer_ready_waiters();
  void expire_waiters();

  UniqueFd listener_;
  uint16_t port_ = 0;
  UniqueFd stop_read_, stop_write_;
  std::unordered_map<int, Client> clients_;  // by socket
  std::unordered_map<std::string, std::vector<uint8_t>> entries_;
  // Set while accepting failed for want of descriptors (EMFILE): the listener is not polled.
  std::optional<Clock::time_point> accept_paused_until_;
  std::thread thread_;
};

}  // namespace kiln::distributed::net
