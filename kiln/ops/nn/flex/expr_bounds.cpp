#include "kiln/ops/nn/flex/expr_bounds.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::flex {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr Interval kAny{-kInf, kInf};
constexpr Interval kTrue{1, 1}, kFalse{0, 0}, kMaybe{0, 1};

Interval point(double v) { return {v, v}; }
bool is_point(Interval x) { return x.lo == x.hi; }

// The interval of f over the corners (f monotone in each argument on the box), or kAny when a
// corner is NaN (inf - inf, 0 * inf).
template <class F>
Interval corners(Interval x, Interval y, const F& f) {
  const double c[] = {f(x.lo, y.lo), f(x.lo, y.hi), f(x.hi, y.lo), f(x.hi, y.hi)};
  Interval r{c[0], c[0]};
  for (double v : c) {
    if (std::isnan(v)) return kAny;
    r.lo = std::min(r.lo, v);
    r.hi = std::max(r.hi, v);
  }
  return r;
}

template <class F>
Interval increasing(Interval x, const F& f) {
  return {f(x.lo), f(x.hi)};
}

Interval truth(bool always, bool never) { return always ? kTrue : never ? kFalse : kMaybe; }
bool nonzero(Interval x) { return x.lo > 0 || x.hi < 0; }
bool zero(Interval x) { return x.lo == 0 && x.hi == 0; }

Interval load(const Node& n, const std::vector<Interval>& v, const Table<double>& t) {
  int64_t count = 1;
  for (size_t k = 0; k < n.args.size(); ++k) {
    const Interval i = v[n.args[k]];
    // Out of range (or NaN): the exact evaluation reports the error. Checked before the casts.
    if (!(i.lo >= 0 && i.hi < static_cast<double>(t.sizes[k]))) return kAny;
    const int64_t lo = static_cast<int64_t>(i.lo), hi = static_cast<int64_t>(i.hi);
    count *= hi - lo + 1;
    if (count > 4096) return kAny;
  }
  Interval r{kInf, -kInf};
  std::vector<int64_t> idx(n.args.size());
  for (size_t k = 0; k < idx.size(); ++k) idx[k] = static_cast<int64_t>(v[n.args[k]].lo);
  for (int64_t e = 0; e < count; ++e) {
    int64_t flat = 0;
    for (size_t k = 0; k < idx.size(); ++k) flat = flat * t.sizes[k] + idx[k];
    r.lo = std::min(r.lo, t.data[flat]);
    r.hi = std::max(r.hi, t.data[flat]);
    for (size_t k = idx.size(); k-- > 0;) {  // the next index of the box, odometer-style
      if (++idx[k] <= static_cast<int64_t>(v[n.args[k]].hi)) break;
      idx[k] = static_cast<int64_t>(v[n.args[k]].lo);
    }
  }
  return std::isnan(r.lo) || std::isnan(r.hi) ? kAny : r;
}

}  // namespace

Interval bounds(const Graph& g, const std::vector<Table<double>>& tables, int64_t b, int64_t h,
                int64_t q_first, int64_t q_last, int64_t kv_first, int64_t kv_last) {
  std::vector<Interval> v(g.nodes.size(), kAny);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    auto a = [&](int k) { return v[n.args[k]]; };
    Interval& r = v[i];
    switch (n.op) {
      case Op::Score:
        r = kAny;
        break;
      case Op::Batch:
        r = point(static_cast<double>(b));
        break;
      case Op::Head:
        r = point(static_cast<double>(h));
        break;
      case Op::QIdx:
        r = {static_cast<double>(q_first), static_cast<double>(q_last)};
        break;
      case Op::KvIdx:
        r = {static_cast<double>(kv_first), static_cast<double>(kv_last)};
        break;
      case Op::Constant:
        r = point(n.value);
        break;
      case Op::Load:
        r = load(n, v, tables[n.tensor]);
        break;
      case Op::Neg:
        r = {-a(0).hi, -a(0).lo};
        break;
      case Op::Not:
        r = truth(zero(a(0)), nonzero(a(0)));
        break;
      case Op::Exp:
        r = increasing(a(0), [](double x) { return std::exp(x); });
        break;
      case Op::Exp2:
        r = increasing(a(0), [](double x) { return std::exp2(x); });
        break;
      case Op::Tanh:
        r = increasing(a(0), [](double x) { return std::tanh(x); });
        break;
      case Op::Sigmoid:
        r = increasing(a(0), [](double x) { return 1 / (1 + std::exp(-x)); });
        break;
      case Op::Log:
        r = a(0).lo >= 0 ? increasing(a(0), [](double x) { return std::log(x); }) : kAny;
        break;
      case Op::Sqrt:
        r = a(0).lo >= 0 ? increasing(a(0), [](double x) { return std::sqrt(x); }) : kAny;
        break;
      case Op::Abs: {
        const Interval x = a(0);
        r = x.lo >= 0 ? x : x.hi <= 0 ? Interval{-x.hi, -x.lo} : Interval{0, std::max(-x.lo, x.hi)};
        break;
      }
      case Op::Add:
        r = corners(a(0), a(1), [](double x, double y) { return x + y; });
        break;
      case Op::Sub:
        r = corners(a(0), a(1), [](double x, double y) { return x - y; });
        break;
      case Op::Mul:
        r = corners(a(0), a(1), [](double x, double y) { return x * y; });
        break;
      case Op::Div:
      case Op::FloorDiv: {
        const Interval y = a(1);
        if (y.lo <= 0 && y.hi >= 0) break;  // kAny
        r = corners(a(0), y, [](double p, double q) { return p / q; });
        if (n.op == Op::FloorDiv) r = {std::floor(r.lo), std::floor(r.hi)};
        break;
      }
      case Op::Mod: {
        const Interval y = a(1);
        if (is_point(y) && y.lo > 0)
          r = {0, y.lo};
        else if (is_point(y) && y.lo < 0)
          r = {y.lo, 0};
        break;
      }
      case Op::Min:
        r = {std::min(a(0).lo, a(1).lo), std::min(a(0).hi, a(1).hi)};
        break;
      case Op::Max:
        r = {std::max(a(0).lo, a(1).lo), std::max(a(0).hi, a(1).hi)};
        break;
      case Op::Lt:
        r = truth(a(0).hi < a(1).lo, a(0).lo >= a(1).hi);
        break;
      case Op::Le:
        r = truth(a(0).hi <= a(1).lo, a(0).lo > a(1).hi);
        break;
      case Op::Gt:
        r = truth(a(0).lo > a(1).hi, a(0).hi <= a(1).lo);
        break;
      case Op::Ge:
        r = truth(a(0).lo >= a(1).hi, a(0).hi < a(1).lo);
        break;
      case Op::Eq:
      case Op::Ne: {
        const bool same = is_point(a(0)) && is_point(a(1)) && a(0).lo == a(1).lo;
        const bool apart = a(0).hi < a(1).lo || a(1).hi < a(0).lo;
        r = n.op == Op::Eq ? truth(same, apart) : truth(apart, same);
        break;
      }
      case Op::And:
        r = truth(nonzero(a(0)) && nonzero(a(1)), zero(a(0)) || zero(a(1)));
        break;
      case Op::Or:
        r = truth(nonzero(a(0)) || nonzero(a(1)), zero(a(0)) && zero(a(1)));
        break;
      case Op::Where: {
        const Interval c = a(0);
        r = nonzero(c) ? a(1)
            : zero(c)  ? a(2)
                       : Interval{std::min(a(1).lo, a(2).lo), std::max(a(1).hi, a(2).hi)};
        break;
      }
    }
    if (std::isnan(r.lo) || std::isnan(r.hi)) r = kAny;
  }
  return v[g.result];
}

}  // namespace kiln::flex
