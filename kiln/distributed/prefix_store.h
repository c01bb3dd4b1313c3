#pragma once
// A view of a Store in which every key gets prefix + "/" in front (c10d's PrefixStore), so that
// several groups of ranks share one store without their keys meeting.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/core/error.h"
#include "kiln/distributed/store.h"

namespace kiln::distributed {

class PrefixStore : public Store {
 public:
  // Starts with store's timeout; set_timeout() on this view changes this view's alone.
  PrefixStore(std::string prefix, std::shared_ptr<Store> store)
      : Store(store ? store->timeout() : kDefaultTimeout),
        prefix_(std::move(prefix)),
        store_(std::move(store)) {
    KILN_CHECK(store_ != nullptr, "PrefixStore: the store under prefix \"", prefix_, "\" is null");
  }

  using Store::set;
  using Store::wait;
  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    store_->set(prefixed(key), value);
  }
  std::vector<uint8_t> get(const std::string& key) override {
    // The underlying get waits for the underlying store's timeout; this view's may differ.
    if (timeout() != store_->timeout()) store_->wait({prefixed(key)}, timeout());
    return store_->get(prefixed(key));
  }
  int64_t add(const std::string& key, int64_t amount) override {
    return store_->add(prefixed(key), amount);
  }
  std::vector<uint8_t> compare_set(const std::string& key, const std::vector<uint8_t>& expected,
                                   const std::vector<uint8_t>& desired) override {
    return store_->compare_set(prefixed(key), expected, desired);
  }
  bool delete_key(const std::string& key) override { return store_->delete_key(prefixed(key)); }
  bool check(const std::vector<std::string>& keys) override {
    return store_->check(prefixed(keys));
  }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    store_->wait(prefixed(keys), timeout);
  }
  // The keys of the whole underlying store, as in c10d: a store cannot count keys by prefix.
  int64_t num_keys() override { return store_->num_keys(); }

  const std::string& prefix() const { return prefix_; }
  const std::shared_ptr<Store>& underlying_store() const { return store_; }

 private:
  std::string prefixed(const std::string& key) const { return prefix_ + "/" + key; }
  std::vector<std::string> prefixed(const std::vector<std::string>& keys) const {
    std::vector<std::string> result;
    result.reserve(keys.size());
    for (const std::string& key : keys) result.push_back(prefixed(key));
    return result;
  }

  std::string prefix_;
  std::shared_ptr<Store> store_;
};

}  // namespace kiln::distributed
