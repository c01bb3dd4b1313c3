#include "kiln/core/symint.h"

#include <algorithm>
#include <sstream>

#include "kiln/core/error.h"

// Note [Symbolic sizes]
// A symbolic size is a polynomial with integer coefficients over "atoms": shape symbols (s0,
// s1, ...) and the operations a polynomial cannot express exactly (floor division, modulo, min,
// max), which stay opaque unless they simplify. The polynomial form makes the common
// simplifications free: s0+s1-s1 is s0, 2*s0*2 is 4*s0, (4*s0)//(2*s0) is 2. A result that turns
// out constant becomes a plain int64 again. Comparisons that the expressions decide (s0+1 > s0)
// need nothing else; others are decided by the symbols' hints (their values in the example
// inputs) and recorded as guards, which a compiled program checks before it is reused. Turning a
// symbolic size into an int64 (implicitly or with guard_int) records "expr == value".

namespace kiln {

struct SymAtom {
  enum class Kind { Symbol, FloorDiv, Mod, Min, Max } kind;
  int id = -1;  // for Symbol
  ShapeEnv* env = nullptr;
  SymInt a, b;      // operands of the opaque operations
  std::string key;  // canonical text: equality and ordering
};
using AtomPtr = std::shared_ptr<const SymAtom>;

struct SymTerm {
  int64_t coeff = 0;
  std::vector<AtomPtr> atoms;  // sorted by key; repeats are powers
  std::string key;             // "" for the constant term
};

struct SymNode {
  std::vector<SymTerm> terms;  // sorted by key, no zero coefficients
  ShapeEnv* env = nullptr;
};

namespace {

std::string monomial_key(const std::vector<AtomPtr>& atoms) {
  std::string k;
  for (const auto& a : atoms) {
    if (!k.empty()) k += "*";
    k += a->key;
  }
  return k;
}

std::vector<SymTerm> terms_of(const SymInt& s) {
  if (!s.is_symbolic()) {
    if (s.guard_int() == 0) return {};
    return {SymTerm{s.guard_int(), {}, ""}};
  }
  return s.node()->terms;
}

ShapeEnv* env_of(const SymInt& a, const SymInt& b) {
  if (a.is_symbolic() && a.node()->env) return a.node()->env;
  if (b.is_symbolic()) return b.node()->env;
  return nullptr;
}

// Builds a SymInt from terms, normalising: merge equal monomials, drop zeros, fold constants.
SymInt make(std::vector<SymTerm> terms, ShapeEnv* env) {
  std::sort(terms.begin(), terms.end(),
            [](const SymTerm& x, const SymTerm& y) { return x.key < y.key; });
  std::vector<SymTerm> merged;
  for (auto& t : terms) {
    if (!merged.empty() && merged.back().key == t.key) {
      merged.back().coeff = checked_add(merged.back().coeff, t.coeff);
    } else {
      merged.push_back(std::move(t));
    }
  }
  std::erase_if(merged, [](const SymTerm& t) { return t.coeff == 0; });
  if (merged.empty()) return SymInt(0);
  if (merged.size() == 1 && merged[0].atoms.empty()) return SymInt(merged[0].coeff);
  auto node = std::make_shared<SymNode>();
  node->terms = std::move(merged);
  node->env = env;
  return SymInt(std::shared_ptr<const SymNode>(std::move(node)));
}

SymInt atom_value(AtomPtr atom) {
  std::vector<SymTerm> t{SymTerm{1, {atom}, atom->key}};
  return make(std::move(t), atom->env);
}

SymInt make_opaque(SymAtom::Kind kind, const SymInt& a, const SymInt& b, const char* fmt_op) {
  auto atom = std::make_shared<SymAtom>();
  atom->kind = kind;
  atom->a = a;
  atom->b = b;
  atom->env = env_of(a, b);
  if (kind == SymAtom::Kind::Min || kind == SymAtom::Kind::Max) {
    atom->key = std::string(fmt_op) + "(" + a.str() + ", " + b.str() + ")";
  } else {
    // Compound operands keep their own parentheses: ((s0+1)//2).
    auto operand = [](const SymInt& x) {
      std::string t = x.str();
      bool compound = x.is_symbolic() && x.node()->terms.size() > 1;
      return compound ? "(" + t + ")" : t;
    };
    atom->key = "(" + operand(a) + fmt_op + operand(b) + ")";
  }
  return atom_value(std::move(atom));
}

int64_t floordiv_int(int64_t a, int64_t b) {
  KILN_CHECK(b != 0, "SymInt: division by zero");
  if (b == -1) return checked_sub(0, a);  // INT64_MIN / -1 overflows
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t mod_int(int64_t a, int64_t b) { return a - floordiv_int(a, b) * b; }

// Symbol values: the given ones, or the hints when `values` is null.
int64_t value_of(const SymInt& s, const std::span<const int64_t>* values);

int64_t eval_atom(const SymAtom& atom, const std::span<const int64_t>* values) {
  switch (atom.kind) {
    case SymAtom::Kind::Symbol:
      if (!values) return atom.env->hint(atom.id);
      KILN_CHECK(static_cast<size_t>(atom.id) < values->size(), "SymInt: no value for symbol ",
                 atom.key, " (", values->size(), " values given)");
      return (*values)[atom.id];
    case SymAtom::Kind::FloorDiv:
      return floordiv_int(value_of(atom.a, values), value_of(atom.b, values));
    case SymAtom::Kind::Mod:
      return mod_int(value_of(atom.a, values), value_of(atom.b, values));
    case SymAtom::Kind::Min:
      return std::min(value_of(atom.a, values), value_of(atom.b, values));
    case SymAtom::Kind::Max:
      return std::max(value_of(atom.a, values), value_of(atom.b, values));
  }
  return 0;
}

int64_t value_of(const SymInt& s, const std::span<const int64_t>* values) {
  if (!s.is_symbolic()) return *s.maybe_int();
  int64_t total = 0;
  for (const auto& t : s.node()->terms) {
    int64_t p = t.coeff;
    for (const auto& a : t.atoms) p = checked_mul(p, eval_atom(*a, values));
    total = checked_add(total, p);
  }
  return total;
}

// The interval an expression's value lies in, from its symbols' ranges, when every atom is a
// symbol (opaque atoms give nullopt). Wide arithmetic: a range's max may be INT64_MAX.
struct Interval {
  __int128 lo, hi;
};
std::optional<Interval> bounds(const SymInt& s) {
  constexpr __int128 kCap = static_cast<__int128>(1) << 100;
  auto clamp = [&](__int128 v) { return std::max(-kCap, std::min(kCap, v)); };
  // a * b saturated at +-kCap: |a| <= kCap and |b| < 2^63, so the product itself may overflow.
  auto mul = [&](__int128 a, __int128 b) -> __int128 {
    const __int128 abs_a = a < 0 ? -a : a, abs_b = b < 0 ? -b : b;
    if (abs_a != 0 && abs_b > kCap / abs_a) return (a < 0) != (b < 0) ? -kCap : kCap;
    return a * b;
  };
  if (!s.is_symbolic()) return Interval{*s.maybe_int(), *s.maybe_int()};
  Interval total{0, 0};
  for (const auto& t : s.node()->terms) {
    __int128 lo = 1, hi = 1;
    for (const auto& a : t.atoms) {
      if (a->kind != SymAtom::Kind::Symbol) return std::nullopt;
      const SymbolRange& r = a->env->range(a->id);
      lo = mul(lo, r.min);
      hi = mul(hi, r.max);
    }
    const __int128 x = mul(lo, t.coeff), y = mul(hi, t.coeff);
    total.lo = clamp(total.lo + std::min(x, y));
    total.hi = clamp(total.hi + std::max(x, y));
  }
  return total;
}

// a / b exactly, when b is a single term dividing every term of a.
std::optional<SymInt> exact_quotient(const SymInt& a, const SymInt& b) {
  auto bt = terms_of(b);
  if (bt.size() != 1 || bt[0].coeff == 0) return std::nullopt;
  std::vector<SymTerm> out;
  for (auto t : terms_of(a)) {
    if (bt[0].coeff == -1 || t.coeff % bt[0].coeff != 0) return std::nullopt;
    for (const auto& atom : bt[0].atoms) {
      auto it = std::find_if(t.atoms.begin(), t.atoms.end(),
                             [&](const AtomPtr& x) { return x->key == atom->key; });
      if (it == t.atoms.end()) return std::nullopt;
      t.atoms.erase(it);
    }
    t.coeff /= bt[0].coeff;
    t.key = monomial_key(t.atoms);
    out.push_back(std::move(t));
  }
  return make(std::move(out), env_of(a, b));
}

}  // namespace

SymInt::SymInt(std::shared_ptr<const SymNode> node) : node_(std::move(node)) {}

int64_t SymInt::hint() const { return node_ ? value_of(*this, nullptr) : v_; }

int64_t SymInt::evaluate(std::span<const int64_t> symbol_values) const {
  return node_ ? value_of(*this, &symbol_values) : v_;
}

std::optional<int64_t> SymInt::maybe_int() const {
  if (!node_) return v_;
  return std::nullopt;
}

ShapeEnv* SymInt::env() const { return node_ ? node_->env : nullptr; }

int64_t SymInt::guard_slow() const {
  int64_t v = hint();
  if (ShapeEnv* env = node_->env)
    env->add_guard({*this, SymInt(v), ShapeGuard::Rel::Eq, env->origin()});
  return v;
}

std::string SymInt::str() const {
  if (!node_) return std::to_string(v_);
  std::string out;
  // Non-constant terms first (by key), the constant last: "4*s0+1".
  std::vector<const SymTerm*> order;
  for (const auto& t : node_->terms)
    if (!t.atoms.empty()) order.push_back(&t);
  for (const auto& t : node_->terms)
    if (t.atoms.empty()) order.push_back(&t);
  for (const SymTerm* t : order) {
    int64_t c = t->coeff;
    if (!out.empty())
      out += c < 0 ? "-" : "+";
    else if (c < 0)
      out += "-";
    int64_t mag = c < 0 ? -c : c;
    if (t->atoms.empty()) {
      out += std::to_string(mag);
    } else {
      if (mag != 1) out += std::to_string(mag) + "*";
      out += t->key;
    }
  }
  return out;
}

bool SymInt::same_as(const SymInt& o) const {
  if (!node_ && !o.node_) return v_ == o.v_;
  return str() == o.str();
}

SymInt SymInt::add_slow(const SymInt& a, const SymInt& b) {
  auto terms = terms_of(a);
  auto tb = terms_of(b);
  terms.insert(terms.end(), tb.begin(), tb.end());
  return make(std::move(terms), env_of(a, b));
}

SymInt SymInt::mul_slow(const SymInt& a, const SymInt& b) {
  std::vector<SymTerm> out;
  for (const auto& x : terms_of(a)) {
    for (const auto& y : terms_of(b)) {
      SymTerm t;
      t.coeff = checked_mul(x.coeff, y.coeff);
      t.atoms = x.atoms;
      t.atoms.insert(t.atoms.end(), y.atoms.begin(), y.atoms.end());
      std::sort(t.atoms.begin(), t.atoms.end(),
                [](const AtomPtr& p, const AtomPtr& q) { return p->key < q->key; });
      t.key = monomial_key(t.atoms);
      out.push_back(std::move(t));
    }
  }
  return make(std::move(out), env_of(a, b));
}

SymInt SymInt::floordiv(const SymInt& a, const SymInt& b) {
  if (!a.node_ && !b.node_) return SymInt(floordiv_int(a.v_, b.v_));
  if (!b.node_ && b.v_ == 1) return a;
  if (auto q = exact_quotient(a, b)) return *q;
  return make_opaque(SymAtom::Kind::FloorDiv, a, b, "//");
}

SymInt SymInt::mod(const SymInt& a, const SymInt& b) {
  if (!a.node_ && !b.node_) return SymInt(mod_int(a.v_, b.v_));
  if (!b.node_ && b.v_ == 1) return SymInt(0);
  if (exact_quotient(a, b)) return SymInt(0);
  return make_opaque(SymAtom::Kind::Mod, a, b, "%");
}

namespace {

// Whether a <= b (true) or a >= b (false) holds for all the symbols' values, by their ranges.
std::optional<bool> ordered(const SymInt& a, const SymInt& b) {
  const SymInt d = a - b;
  if (auto v = d.maybe_int()) return *v <= 0;
  if (auto r = bounds(d)) {
    if (r->hi <= 0) return true;
    if (r->lo >= 0) return false;
  }
  return std::nullopt;
}

}  // namespace

SymInt SymInt::min(const SymInt& a, const SymInt& b) {
  if (!a.node_ && !b.node_) return SymInt(std::min(a.v_, b.v_));
  if (auto le = ordered(a, b)) return *le ? a : b;  // min(s, 1) is 1 where s >= 2
  return make_opaque(SymAtom::Kind::Min, a, b, "min");
}

SymInt SymInt::max(const SymInt& a, const SymInt& b) {
  if (!a.node_ && !b.node_) return SymInt(std::max(a.v_, b.v_));
  if (auto le = ordered(a, b)) return *le ? b : a;  // max(s, 1) is s where s >= 1
  return make_opaque(SymAtom::Kind::Max, a, b, "max");
}

bool SymInt::compare_slow(const SymInt& a, const SymInt& b, Cmp c) {
  SymInt diff = a - b;
  if (auto d = diff.maybe_int()) return c == Cmp::Eq ? *d == 0 : *d < 0;
  if (auto r = bounds(diff)) {  // decided by the symbols' ranges: no guard
    if (c == Cmp::Eq && (r->lo > 0 || r->hi < 0)) return false;
    if (c == Cmp::Lt && r->hi < 0) return true;
    if (c == Cmp::Lt && r->lo >= 0) return false;
  }
  int64_t h = diff.hint();
  bool result = c == Cmp::Eq ? h == 0 : h < 0;
  if (ShapeEnv* env = env_of(a, b)) {
    using Rel = ShapeGuard::Rel;
    const Rel rel = c == Cmp::Eq ? (result ? Rel::Eq : Rel::Ne) : (result ? Rel::Lt : Rel::Ge);
    env->add_guard({a, b, rel, env->origin()});
  }
  return result;
}

std::ostream& operator<<(std::ostream& os, const SymInt& s) { return os << s.str(); }

bool ShapeGuard::holds(std::span<const int64_t> symbol_values) const {
  const int64_t l = lhs.evaluate(symbol_values), r = rhs.evaluate(symbol_values);
  switch (rel) {
    case Rel::Eq:
      return l == r;
    case Rel::Ne:
      return l != r;
    case Rel::Lt:
      return l < r;
    case Rel::Ge:
      return l >= r;
  }
  return false;
}

std::string ShapeGuard::str() const {
  static constexpr const char* kOps[] = {" == ", " != ", " < ", " >= "};
  return lhs.str() + kOps[static_cast<int>(rel)] + rhs.str();
}

SymInt ShapeEnv::create_symbol(int64_t hint, std::string name, SymbolRange range) {
  KILN_CHECK(range.contains(hint), "ShapeEnv: symbol ", name, " has the example value ", hint,
             ", outside its range [", range.min, ", ", range.max, "]");
  int id = static_cast<int>(hints_.size());
  if (name.empty()) name = "s" + std::to_string(id);
  hints_.push_back(hint);
  names_.push_back(name);
  ranges_.push_back(range);
  auto atom = std::make_shared<SymAtom>();
  atom->kind = SymAtom::Kind::Symbol;
  atom->id = id;
  atom->env = this;
  atom->key = name;
  return atom_value(std::move(atom));
}

void ShapeEnv::add_guard(ShapeGuard guard) {
  const std::string text = guard.str();
  for (const auto& g : guards_)
    if (g.str() == text) return;
  guards_.push_back(std::move(guard));
}

bool ShapeEnv::check(std::span<const int64_t> symbol_values, std::string* why) const {
  KILN_CHECK(symbol_values.size() == hints_.size(), "ShapeEnv::check: expected ", hints_.size(),
             " symbol values, got ", symbol_values.size());
  auto values_text = [&] {
    std::string t;
    for (size_t i = 0; i < names_.size(); ++i)
      t += (i ? ", " : "") + names_[i] + " = " + std::to_string(symbol_values[i]);
    return t;
  };
  for (size_t i = 0; i < ranges_.size(); ++i) {
    if (ranges_[i].contains(symbol_values[i])) continue;
    if (why)
      *why = names_[i] + " = " + std::to_string(symbol_values[i]) + " is outside [" +
             std::to_string(ranges_[i].min) + ", " + std::to_string(ranges_[i].max) + "]";
    return false;
  }
  for (const auto& g : guards_) {
    if (g.holds(symbol_values)) continue;
    if (why) *why = g.str() + " (" + values_text() + ")";
    return false;
  }
  return true;
}

}  // namespace kiln
