#pragma once
// SymInt: a size that is a plain int64 (the fast path, no allocation) or a symbolic expression
// over shape symbols (s0, s0*4, s1+1, s0//2). See Note [Symbolic sizes] in symint.cpp.
#include <concepts>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "kiln/core/size_math.h"

namespace kiln {

struct SymNode;
class ShapeEnv;

class SymInt {
 public:
  SymInt() = default;
  template <std::integral I>
  SymInt(I v) : v_(static_cast<int64_t>(v)) {  // NOLINT: sizes read naturally as integers
    if constexpr (std::is_unsigned_v<I> && sizeof(I) >= sizeof(int64_t)) {
      if (v > static_cast<uint64_t>(INT64_MAX)) [[unlikely]]
        detail::throw_size_too_large(static_cast<uint64_t>(v));
    }
  }
  explicit SymInt(std::shared_ptr<const SymNode> node);

  bool is_symbolic() const { return node_ != nullptr; }
  // The concrete value; for a symbolic size, specialises it and records a guard.
  int64_t guard_int() const { return node_ ? guard_slow() : v_; }
  operator int64_t() const { return guard_int(); }  // NOLINT: see Note [Symbolic sizes]
  // The value this size has in the example inputs (no guard recorded).
  int64_t hint() const;
  // The value if it is known without guarding.
  std::optional<int64_t> maybe_int() const;
  // The value with symbol i taken as symbol_values[i] (a guard check or a compiled call's sizes).
  int64_t evaluate(std::span<const int64_t> symbol_values) const;
  const std::shared_ptr<const SymNode>& node() const { return node_; }
  std::string str() const;
  // True when both sides are the same expression (no guard, no hints involved).
  bool same_as(const SymInt& o) const;
  ShapeEnv* env() const;

  friend SymInt operator+(const SymInt& a, const SymInt& b) {
    if (!a.node_ && !b.node_) [[likely]]
      return SymInt(checked_add(a.v_, b.v_));
    return add_slow(a, b);
  }
  friend SymInt operator-(const SymInt& a, const SymInt& b) {
    if (!a.node_ && !b.node_) [[likely]]
      return SymInt(checked_sub(a.v_, b.v_));
    return add_slow(a, mul_slow(b, SymInt(-1)));
  }
  friend SymInt operator*(const SymInt& a, const SymInt& b) {
    if (!a.node_ && !b.node_) [[likely]]
      return SymInt(checked_mul(a.v_, b.v_));
    return mul_slow(a, b);
  }
  // Floor division and Python-style modulo (sizes are non-negative, so this matches C++ there).
  friend SymInt operator/(const SymInt& a, const SymInt& b) { return floordiv(a, b); }
  friend SymInt operator%(const SymInt& a, const SymInt& b) { return mod(a, b); }
  SymInt operator-() const {
    return node_ ? mul_slow(*this, SymInt(-1)) : SymInt(checked_sub(0, v_));
  }
  SymInt& operator+=(const SymInt& o) { return *this = *this + o; }
  SymInt& operator-=(const SymInt& o) { return *this = *this - o; }
  SymInt& operator*=(const SymInt& o) { return *this = *this * o; }
  SymInt& operator/=(const SymInt& o) { return *this = *this / o; }

  static SymInt floordiv(const SymInt& a, const SymInt& b);
  static SymInt mod(const SymInt& a, const SymInt& b);
  static SymInt min(const SymInt& a, const SymInt& b);
  static SymInt max(const SymInt& a, const SymInt& b);

  // Comparisons decide from the expressions when they can, otherwise from the hints, recording
  // the decision as a guard in the shape environment.
  friend bool operator==(const SymInt& a, const SymInt& b) {
    if (!a.node_ && !b.node_) [[likely]]
      return a.v_ == b.v_;
    return compare_slow(a, b, Cmp::Eq);
  }
  friend bool operator<(const SymInt& a, const SymInt& b) {
    if (!a.node_ && !b.node_) [[likely]]
      return a.v_ < b.v_;
    return compare_slow(a, b, Cmp::Lt);
  }
  friend bool operator!=(const SymInt& a, const SymInt& b) { return !(a == b); }
  friend bool operator>(const SymInt& a, const SymInt& b) { return b < a; }
  friend bool operator<=(const SymInt& a, const SymInt& b) { return !(b < a); }
  friend bool operator>=(const SymInt& a, const SymInt& b) { return !(a < b); }

  // Mixed SymInt/integer forms: exact matches so they win over the built-in operators that the
  // implicit conversion to int64 would otherwise make ambiguous.
#define KILN_SYMINT_MIXED(op, R)               \
  template <std::integral I>                   \
  friend R operator op(const SymInt& a, I b) { \
    return a op SymInt(b);                     \
  }                                            \
  template <std::integral I>                   \
  friend R operator op(I a, const SymInt& b) { \
    return SymInt(a) op b;                     \
  }
  KILN_SYMINT_MIXED(+, SymInt)
  KILN_SYMINT_MIXED(-, SymInt)
  KILN_SYMINT_MIXED(*, SymInt)
  KILN_SYMINT_MIXED(/, SymInt)
  KILN_SYMINT_MIXED(%, SymInt)
  KILN_SYMINT_MIXED(==, bool)
  KILN_SYMINT_MIXED(!=, bool)
  KILN_SYMINT_MIXED(<, bool)
  KILN_SYMINT_MIXED(<=, bool)
  KILN_SYMINT_MIXED(>, bool)
  KILN_SYMINT_MIXED(>=, bool)
#undef KILN_SYMINT_MIXED

  enum class Cmp { Eq, Lt };

 private:
  int64_t guard_slow() const;
  static SymInt add_slow(const SymInt& a, const SymInt& b);
  static SymInt mul_slow(const SymInt& a, const SymInt& b);
  static bool compare_slow(const SymInt& a, const SymInt& b, Cmp c);

  int64_t v_ = 0;
  std::shared_ptr<const SymNode> node_;
};

std::ostream& operator<<(std::ostream& os, const SymInt& s);
inline SymInt sym_min(const SymInt& a, const SymInt& b) { return SymInt::min(a, b); }
inline SymInt sym_max(const SymInt& a, const SymInt& b) { return SymInt::max(a, b); }

// A relation among sizes that a trace relied on: `lhs rel rhs` over the symbols of one ShapeEnv,
// with where the trace decided it ("view", an op's meta function; "user code" when the function
// itself compared or specialised a size). A compiled graph is reused only where all its guards
// hold.
struct ShapeGuard {
  enum class Rel { Eq, Ne, Lt, Ge };
  SymInt lhs, rhs;
  Rel rel = Rel::Eq;
  std::string origin;

  bool holds(std::span<const int64_t> symbol_values) const;
  std::string str() const;  // "s0 == 8"
};

// The values a symbol may take: sizes are >= 0; the tracer's symbols are >= 2 (0 and 1
// specialise, as in PyTorch), and mark_dynamic narrows them further.
struct SymbolRange {
  int64_t min = 0;
  int64_t max = std::numeric_limits<int64_t>::max();
  bool contains(int64_t v) const { return min <= v && v <= max; }
};

// Owns the shape symbols of one trace: their names, hints (example values), ranges and the
// guards recorded when a symbolic size was specialised or compared. Must outlive its symbols.
class ShapeEnv {
 public:
  ShapeEnv() = default;
  ShapeEnv(const ShapeEnv&) = delete;
  ShapeEnv& operator=(const ShapeEnv&) = delete;

  SymInt create_symbol(int64_t hint, std::string name = "", SymbolRange range = {});
  int num_symbols() const { return static_cast<int>(hints_.size()); }
  int64_t hint(int symbol_id) const { return hints_.at(symbol_id); }
  const std::string& name(int symbol_id) const { return names_.at(symbol_id); }
  const SymbolRange& range(int symbol_id) const { return ranges_.at(symbol_id); }

  void add_guard(ShapeGuard guard);
  const std::vector<ShapeGuard>& guards() const { return guards_; }
  // Where decisions are being made now (the tracer sets it around each op's meta function).
  void set_origin(std::string origin) { origin_ = std::move(origin); }
  const std::string& origin() const { return origin_; }

  // Whether symbol values satisfy every range and guard; on failure, why (the first that fails,
  // with the values: "s0 == 8 (s0 = 16)").
  bool check(std::span<const int64_t> symbol_values, std::string* why = nullptr) const;

 private:
  std::vector<int64_t> hints_;
  std::vector<std::string> names_;
  std::vector<SymbolRange> ranges_;
  std::vector<ShapeGuard> guards_;
  std::string origin_ = "user code";
};

}  // namespace kiln
