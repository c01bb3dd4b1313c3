#pragma once
// Non-owning views over lists of sizes (IntArrayRef, SymIntArrayRef) and the owning list that
// size parameters accept (SymIntList), with libtorch's spellings.
#include <array>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <optional>
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
  template <size_t N>
  ArrayRef(const std::array<T, N>& a) : data_(a.data()), size_(N) {}  // NOLINT
  template <size_t N>
  ArrayRef(const T (&a)[N]) : data_(a), size_(N) {}  // NOLINT
  // Like c10::ArrayRef: valid for the full-expression that creates the list (a call argument).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  ArrayRef(std::initializer_list<T> l) : data_(l.begin()), size_(l.size()) {}  // NOLINT
#pragma GCC diagnostic pop

  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  std::reverse_iterator<const T*> rbegin() const { return std::reverse_iterator(end()); }
  std::reverse_iterator<const T*> rend() const { return std::reverse_iterator(begin()); }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](size_t i) const { return data_[i]; }
  const T& front() const { return data_[0]; }
  const T& back() const { return data_[size_ - 1]; }
  const T& at(size_t i) const {
    if (i >= size_) detail::throw_index_out_of_range("ArrayRef::at", i, size_);
    return data_[i];
  }
  // Elements [n, n + m) and [n, size()), as c10::ArrayRef::slice.
  ArrayRef slice(size_t n, size_t m) const {
    if (n > size_ || m > size_ - n)
      detail::throw_index_out_of_range("ArrayRef::slice", n + m, size_);
    return ArrayRef(data_ + n, m);
  }
  ArrayRef slice(size_t n) const { return slice(n, size_ - (n > size_ ? 0 : n)); }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  bool equals(ArrayRef o) const {
    if (size_ != o.size_) return false;
    for (size_t i = 0; i < size_; ++i)
      if (!(data_[i] == o.data_[i])) return false;
    return true;
  }
  friend bool operator==(ArrayRef a, ArrayRef b) { return a.equals(b); }
  friend bool operator==(ArrayRef a, const std::vector<T>& b) { return a.equals(ArrayRef(b)); }
  operator std::vector<T>() const { return vec(); }  // NOLINT: std::vector<int64_t> v = x.sizes()

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};
using IntArrayRef = ArrayRef<int64_t>;

// An optional list of dims: nullopt (all dims), one dim, {0, 2}, a std::vector or an IntArrayRef
// (libtorch's at::OptionalIntArrayRef). Like ArrayRef it refers to the caller's list.
class OptionalIntArrayRef : public std::optional<IntArrayRef> {
 public:
  OptionalIntArrayRef() = default;
  OptionalIntArrayRef(std::nullopt_t) {}                                                // NOLINT
  OptionalIntArrayRef(std::optional<IntArrayRef> r) : std::optional<IntArrayRef>(r) {}  // NOLINT
  OptionalIntArrayRef(IntArrayRef r) : std::optional<IntArrayRef>(r) {}                 // NOLINT
  OptionalIntArrayRef(const int64_t& one)
      : std::optional<IntArrayRef>(IntArrayRef(one)) {}  // NOLINT
  OptionalIntArrayRef(const std::vector<int64_t>& v)     // NOLINT
      : std::optional<IntArrayRef>(IntArrayRef(v)) {}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  OptionalIntArrayRef(std::initializer_list<int64_t> l)  // NOLINT
      : std::optional<IntArrayRef>(IntArrayRef(l)) {}
#pragma GCC diagnostic pop
};
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

// What a size parameter accepts: {2, 3}, a std::vector<int64_t>, x.sizes(), symbolic sizes, and
// one size (zeros(3), view(-1)), as libtorch's IntArrayRef does.
class SymIntList {
 public:
  SymIntList() = default;
  template <std::integral I>
  SymIntList(I one) : v_{SymInt(one)} {}                                 // NOLINT
  SymIntList(const SymInt& one) : v_{one} {}                             // NOLINT
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
