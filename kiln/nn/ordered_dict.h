#pragma once
// OrderedDict: a map that remembers insertion order, with libtorch's interface
// (items() whose entries have key() and value(), keys(), values(), operator[], contains).
// Modules keep their parameters, buffers and children in one, so iteration order is
// registration order, as in PyTorch.
#include <cstddef>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kiln/core/error.h"

namespace kiln {

template <class Key, class Value>
class OrderedDict {
 public:
  class Item {
   public:
    Item(Key key, Value value) : pair_(std::move(key), std::move(value)) {}
    const Key& key() const { return pair_.first; }
    Value& value() { return pair_.second; }
    const Value& value() const { return pair_.second; }
    Value& operator*() { return pair_.second; }
    const Value& operator*() const { return pair_.second; }
    Value* operator->() { return &pair_.second; }
    const Value* operator->() const { return &pair_.second; }
    const std::pair<Key, Value>& pair() const { return pair_; }

   private:
    std::pair<Key, Value> pair_;
  };

  OrderedDict() = default;
  explicit OrderedDict(std::string key_description)
      : key_description_(std::move(key_description)) {}
  OrderedDict(std::initializer_list<Item> items) {
    for (const Item& i : items) insert(i.key(), i.value());
  }

  Value& insert(Key key, Value value) {
    KILN_CHECK(index_.count(key) == 0, key_description_, " '", key, "' already defined");
    index_.emplace(key, items_.size());
    items_.emplace_back(std::move(key), std::move(value));
    return items_.back().value();
  }
  // Inserts or overwrites.
  Value& insert_or_assign(Key key, Value value) {
    if (Value* v = find(key)) return *v = std::move(value);
    return insert(std::move(key), std::move(value));
  }
  void update(const OrderedDict& other) {
    for (const Item& i : other) insert_or_assign(i.key(), i.value());
  }
  void erase(const Key& key) {
    auto it = index_.find(key);
    KILN_CHECK(it != index_.end(), key_description_, " '", key, "' is not defined");
    items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(it->second));
    index_.clear();
    for (size_t i = 0; i < items_.size(); ++i) index_.emplace(items_[i].key(), i);
  }
  void clear() {
    items_.clear();
    index_.clear();
  }

  Value* find(const Key& key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value();
  }
  const Value* find(const Key& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value();
  }
  bool contains(const Key& key) const { return index_.count(key) != 0; }
  Value& operator[](const Key& key) {
    Value* v = find(key);
    KILN_CHECK(v != nullptr, key_description_, " '", key, "' is not defined");
    return *v;
  }
  const Value& operator[](const Key& key) const {
    return const_cast<OrderedDict&>(*this)[key];  // NOLINT: same lookup, const result
  }
  Item& operator[](size_t index) {
    KILN_CHECK(index < items_.size(), "OrderedDict: index ", index, " is out of range for size ",
               items_.size());
    return items_[index];
  }
  const Item& operator[](size_t index) const {
    return const_cast<OrderedDict&>(*this)[index];  // NOLINT: same lookup, const result
  }

  size_t size() const { return items_.size(); }
  bool is_empty() const { return items_.empty(); }
  bool empty() const { return items_.empty(); }
  const std::vector<Item>& items() const { return items_; }
  std::vector<Key> keys() const {
    std::vector<Key> r;
    r.reserve(items_.size());
    for (const Item& i : items_) r.push_back(i.key());
    return r;
  }
  std::vector<Value> values() const {
    std::vector<Value> r;
    r.reserve(items_.size());
    for (const Item& i : items_) r.push_back(i.value());
    return r;
  }
  Item& front() { return items_.front(); }
  Item& back() { return items_.back(); }

  typename std::vector<Item>::iterator begin() { return items_.begin(); }
  typename std::vector<Item>::iterator end() { return items_.end(); }
  typename std::vector<Item>::const_iterator begin() const { return items_.begin(); }
  typename std::vector<Item>::const_iterator end() const { return items_.end(); }

 private:
  std::string key_description_ = "Key";
  std::vector<Item> items_;
  std::unordered_map<Key, size_t> index_;
};

}  // namespace kiln
