#pragma once
// A Store served over TCP (c10d's TCPStore). The master instance runs the server on a thread of
// its own; every instance, the master included, is a client of that server. Blocking calls (get,
// wait) wait on the server, which answers as soon as the keys are set or the timeout passes.
// Calls on one instance run one at a time: a thread blocked in get() holds its instance, so the
// key it waits for must come through another instance (as it does between ranks).
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/distributed/store.h"

namespace kiln::distributed {

namespace net {
class TCPStoreServer;
}  // namespace net

class TCPStore : public Store {
 public:
  // The master listens on port of every interface (port 0: one the OS picks, see port()). Every
  // instance connects to host:port, retrying until timeout as the master may start later. With
  // world_size and wait_for_workers the constructor returns once world_size instances have
  // joined, or throws when timeout passes first.
  TCPStore(std::string host, uint16_t port, std::optional<int> world_size = std::nullopt,
           bool is_master = false, std::chrono::milliseconds timeout = Store::kDefaultTimeout,
           bool wait_for_workers = true);
  ~TCPStore() override;

  using Store::set;
  using Store::wait;
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t amount) override;
  std::vector<uint8_t> compare_set(const std::string& key, const std::vector<uint8_t>& expected,
                                   const std::vector<uint8_t>& desired) override;
  bool delete_key(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  // The keys set through the Store interface; the store's own bookkeeping keys are not counted.
  int64_t num_keys() override;

  const std::string& host() const { return host_; }
  // The port the store listens on: the OS's pick when the master was given port 0.
  uint16_t port() const { return port_; }
  bool is_master() const { return server_ != nullptr; }

 private:
  class Connection;

  std::string address() const;
  void wait_for_workers(int world_size, std::chrono::milliseconds timeout);

  std::string host_;
  uint16_t port_;
  // Declared before connection_, so it is destroyed after it.
  std::unique_ptr<net::TCPStoreServer> server_;
  std::unique_ptr<Connection> connection_;
};

}  // namespace kiln::distributed
