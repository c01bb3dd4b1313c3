#pragma once
// Non-owning views over lists of sizes (IntArrayRef, SymIntArrayRef) and the owning list that
// size parameters accept (SymIntList), with libtorch's spellings.
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <vector>

#include "kiln/core/symint.h"

namespace kiln {

template <class T>
class ArrayRef {
 public:
  ArrayRef() = default;
  ArrayRef(const T& one) : data_(&one), size_(1) {}  // NOLINT: x.sum(1) reads like torch
  ArrayRef(const T* data, size_t n) : data_(data), size_(n) {}
  ArrayRef(const std::vector<T>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  // Like c10::ArrayRef: valid for the full-expression that creates the list (a call argument).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  ArrayRef(std::initializer_list<T> l) : data_(l.begin()), size_(l.size()) {}  // NOLINT
#pragma GCC diagnostic pop

  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](size_t i) const { return data_[i]; }
  const T& front() const { return data_[0]; }
  const T& back() const { return data_[size_ - 1]; }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  bool equals(ArrayRef o) const {
    if (size_ != o.size_) return false;
    for (size_t i = 0; i < size_; ++i)
      if (!(data_[i] == o.data_[i])) return false;
    return true;
  }
  friend bool operator==(ArrayRef a, ArrayRef b) { return a.equals(b); }
  friend bool operator==(ArrayRef a, const std::vector<T>& b) { return a.equals(ArrayRef(b)); }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};
using IntArrayRef = ArrayRef<int64_t>;
using SymShape = std::vector<SymInt>;

// Sizes as stored in a tensor: SymInts, concrete in eager code.
class SymIntArrayRef : public ArrayRef<SymInt> {
 public:
  using ArrayRef<SymInt>::ArrayRef;
  // The concrete sizes (specialising symbolic ones).
  std::vector<int64_t> vec() const {
    std::vector<int64_t> out;
    out.reserve(size());
    for (const SymInt& s : *this) out.push_back(s.guard_int());
    return out;
  }
  SymShape sym_vec() const { return SymShape(begin(), end()); }
  operator SymShape() const { return sym_vec(); }  // NOLINT: SymShape s = x.sym_sizes()
  friend bool operator==(SymIntArrayRef a, const std::vector<int64_t>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < b.size(); ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
  friend bool operator==(SymIntArrayRef a, SymIntArrayRef b) { return a.equals(b); }
};

// What a size parameter accepts: {2, 3}, a std::vector<int64_t>, x.sizes(), symbolic sizes.
class SymIntList {
 public:
  SymIntList() = default;
  SymIntList(std::initializer_list<SymInt> l) : v_(l) {}                 // NOLINT
  SymIntList(const SymShape& v) : v_(v) {}                               // NOLINT
  SymIntList(SymShape&& v) : v_(std::move(v)) {}                         // NOLINT
  SymIntList(SymIntArrayRef r) : v_(r.begin(), r.end()) {}               // NOLINT
  SymIntList(IntArrayRef r) : v_(r.begin(), r.end()) {}                  // NOLINT
  SymIntList(const std::vector<int64_t>& v) : v_(v.begin(), v.end()) {}  // NOLINT
  const SymShape& get() const& { return v_; }
  SymShape get() && { return std::move(v_); }
  size_t size() const { return v_.size(); }

 private:
  SymShape v_;
};

std::ostream& operator<<(std::ostream& os, IntArrayRef r);
std::ostream& operator<<(std::ostream& os, SymIntArrayRef r);
inline std::ostream& operator<<(std::ostream& os, const SymShape& s) {
  return os << SymIntArrayRef(s);
}

}  // namespace kiln
