#include "kiln/distributed/hash_store.h"

#include <algorithm>
#include <string>

#include "kiln/core/error.h"

namespace kiln::distributed {

void HashStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  {
    std::lock_guard lock(mutex_);
    values_[key] = value;
  }
  changed_cv_.notify_all();
}

std::vector<uint8_t> HashStore::get(const std::string& key) {
  wait({key}, timeout());
  std::lock_guard lock(mutex_);
  return values_.at(key);
}

int64_t HashStore::add(const std::string& key, int64_t amount) {
  int64_t value = amount;
  {
    std::lock_guard lock(mutex_);
    const auto it = values_.find(key);
    if (it != values_.end()) {
      const std::string text(it->second.begin(), it->second.end());
      char* end = nullptr;
      const long long current = std::strtoll(text.c_str(), &end, 10);
      KILN_CHECK(!text.empty() && *end == '\0', "HashStore::add: key \"", key, "\" holds \"", text,
                 "\", not a counter");
      value += current;
    }
    const std::string text = std::to_string(value);
    values_[key] = std::vector<uint8_t>(text.begin(), text.end());
  }
  changed_cv_.notify_all();
  return value;
}

std::vector<uint8_t> HashStore::compare_set(const std::string& key,
                                            const std::vector<uint8_t>& expected,
                                            const std::vector<uint8_t>& desired) {
  std::vector<uint8_t> result;
  {
    std::lock_guard lock(mutex_);
    const auto it = values_.find(key);
    if (it == values_.end()) {
      if (!expected.empty()) return {};
      values_[key] = desired;
      result = desired;
    } else if (it->second == expected) {
      it->second = desired;
      result = desired;
    } else {
      return it->second;
    }
  }
  changed_cv_.notify_all();
  return result;
}

bool HashStore::delete_key(const std::string& key) {
  std::lock_guard lock(mutex_);
  return values_.erase(key) > 0;
}

bool HashStore::check(const std::vector<std::string>& keys) {
  std::lock_guard lock(mutex_);
  return std::all_of(keys.begin(), keys.end(), [&](const auto& k) { return values_.count(k); });
}

void HashStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  const bool all_set = changed_cv_.wait_for(lock, timeout, [&] {
    return std::all_of(keys.begin(), keys.end(), [&](const auto& k) { return values_.count(k); });
  });
  KILN_CHECK(all_set, "HashStore::wait: ", quoted_keys(keys), " not set within ", timeout.count(),
             " ms");
}

int64_t HashStore::num_keys() {
  std::lock_guard lock(mutex_);
  return static_cast<int64_t>(values_.size());
}

}  // namespace kiln::distributed
