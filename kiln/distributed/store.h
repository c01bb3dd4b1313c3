#pragma once
// The key-value store a process group rendezvous through (c10d's Store): ranks publish their
// addresses under keys and wait for each other's. Values are bytes; `add` keeps a counter as its
// decimal text, as c10d does, so get() of a counter reads "3". Every blocking call gives up after
// timeout() with a kiln::Error naming the keys it waited for.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::distributed {

class Store {
 public:
  static constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::minutes(5);

  explicit Store(std::chrono::milliseconds timeout = kDefaultTimeout) : timeout_(timeout) {}
  virtual ~Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  virtual void set(const std::string& key, const std::vector<uint8_t>& value) = 0;
  // The value of key, waiting up to timeout() for it to be set.
  virtual std::vector<uint8_t> get(const std::string& key) = 0;
  // Adds amount to the counter at key (a missing key counts as 0) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t amount) = 0;
  // Sets key to desired if its value is expected (or if it is missing and expected is empty);
  // returns the value after the call.
  virtual std::vector<uint8_t> compare_set(const std::string& key,
                                           const std::vector<uint8_t>& expected,
                                           const std::vector<uint8_t>& desired) = 0;
  // Whether the key existed.
  virtual bool delete_key(const std::string& key) = 0;
  // Whether every key is set, without waiting.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }
  virtual int64_t num_keys() = 0;

  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

  // Text helpers over the byte interface.
  void set(const std::string& key, const std::string& value) {
    set(key, std::vector<uint8_t>(value.begin(), value.end()));
  }
  std::string get_string(const std::string& key) {
    const std::vector<uint8_t> v = get(key);
    return std::string(v.begin(), v.end());
  }

 private:
  std::chrono::milliseconds timeout_;
};

// The keys an error message names, quoted: at most eight, then "and N more".
std::string quoted_keys(const std::vector<std::string>& keys);

}  // namespace kiln::distributed
