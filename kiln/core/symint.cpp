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

int64_t eval_atom(const SymAtom& atom) {
  switch (atom.kind) {
    case SymAtom::Kind::Symbol:
      return atom.env->hint(atom.id);
    case SymAtom::Kind::FloorDiv:
      return floordiv_int(atom.a.hint(), atom.b.hint());
    case SymAtom::Kind::Mod:
      return mod_int(atom.a.hint(), atom.b.hint());
    case SymAtom::Kind::Min:
      return std::min(atom.a.hint(), atom.b.hint());
    case SymAtom::Kind::Max:
      return std::max(atom.a.hint(), atom.b.hint());
  }
  return 0;
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

int64_t SymInt::hint() const {
  if (!node_) return v_;
  int64_t total = 0;
  for (const auto& t : node_->terms) {
    int64_t p = t.coeff;
    for (const auto& a : t.atoms) p = checked_mul(p, eval_atom(*a));
    total = checked_add(total, p);
  }
  return total;
}

std::optional<int64_t> SymInt::maybe_int() const {
  if (!node_) return v_;
  return std::nullopt;
}

ShapeEnv* SymInt::env() const { return node_ ? node_->env : nullptr; }

int64_t SymInt::guard_slow() const {
  int64_t v = hint();
  if (node_->env) node_->env->add_guard(str() + " == " + std::to_string(v));
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

SymInt SymInt::min(const SymInt& a, const SymInt& b) {
  if (!a.node_ && !b.node_) return SymInt(std::min(a.v_, b.v_));
  if (auto d = (a - b).maybe_int()) return *d <= 0 ? a : b;
  return make_opaque(SymAtom::Kind::Min, a, b, "min");
}

SymInt SymInt::max(const SymInt& a, const SymInt& b) {
  if (!a.node_ && !b.node_) return SymInt(std::max(a.v_, b.v_));
  if (auto d = (a - b).maybe_int()) return *d >= 0 ? a : b;
  return make_opaque(SymAtom::Kind::Max, a, b, "max");
}

bool SymInt::compare_slow(const SymInt& a, const SymInt& b, Cmp c) {
  SymInt diff = a - b;
  if (auto d = diff.maybe_int()) return c == Cmp::Eq ? *d == 0 : *d < 0;
  int64_t h = diff.hint();
  bool result = c == Cmp::Eq ? h == 0 : h < 0;
  if (ShapeEnv* env = env_of(a, b)) {
    const char* op = c == Cmp::Eq ? (result ? " == " : " != ") : (result ? " < " : " >= ");
    env->add_guard(a.str() + op + b.str());
  }
  return result;
}

std::ostream& operator<<(std::ostream& os, const SymInt& s) { return os << s.str(); }

SymInt ShapeEnv::create_symbol(int64_t hint, std::string name) {
  int id = static_cast<int>(hints_.size());
  if (name.empty()) name = "s" + std::to_string(id);
  hints_.push_back(hint);
  names_.push_back(name);
  auto atom = std::make_shared<SymAtom>();
  atom->kind = SymAtom::Kind::Symbol;
  atom->id = id;
  atom->env = this;
  atom->key = name;
  return atom_value(std::move(atom));
}

void ShapeEnv::add_guard(const std::string& guard) {
  if (std::find(guards_.begin(), guards_.end(), guard) == guards_.end()) guards_.push_back(guard);
}

}  // namespace kiln
