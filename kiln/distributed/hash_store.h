#pragma once
// A Store in this process's memory (c10d's HashStore): for ranks that are threads of one process,
// and for single-rank groups, which need no rendezvous across processes.
#include <condition_variable>
#include <map>
#include <mutex>

#include "kiln/distributed/store.h"

namespace kiln::distributed {

class HashStore : public Store {
 public:
  explicit HashStore(std::chrono::milliseconds timeout = Store::kDefaultTimeout) : Store(timeout) {}

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
  int64_t num_keys() override;

 private:
  std::mutex mutex_;
  std::condition_variable changed_cv_;
  std::map<std::string, std::vector<uint8_t>> values_;
};

}  // namespace kiln::distributed
