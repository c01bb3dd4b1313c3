#pragma once
// A Store in a file that processes on one machine (or a shared file system with flock) share,
// c10d's FileStore. The file is an append-only log of set and delete records: every call takes
// flock on it, reads the records other processes appended since its last call and appends its
// own, so add and compare_set are atomic across processes. get and wait poll the file.
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/distributed/store.h"

namespace kiln::distributed {

class FileStore : public Store {
 public:
  // With num_workers > 0 the last of that many instances to be destroyed removes the file;
  // otherwise the file stays.
  explicit FileStore(std::string path, int num_workers = -1,
                     std::chrono::milliseconds timeout = Store::kDefaultTimeout);
  ~FileStore() override;

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

  const std::string& path() const { return path_; }

 private:
  class Transaction;

  void read_new_records();
  void append_set(const std::string& key, const std::vector<uint8_t>& value);
  void append_delete(const std::string& key);
  void append(const std::vector<uint8_t>& record);
  int64_t add_locked(const std::string& key, int64_t amount);

  std::string path_;
  int num_workers_;
  int fd_ = -1;
  std::mutex mutex_;          // one call at a time per instance; flock orders the instances
  uint64_t read_offset_ = 0;  // where the records this instance has not read yet start
  std::unordered_map<std::string, std::vector<uint8_t>> entries_;
};

}  // namespace kiln::distributed
