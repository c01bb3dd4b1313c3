// Forward-mode symbolic differentiation of a traced graph with respect to one node: each node's
// tangent is built from its operands' tangents with the usual rules, as new nodes of a copy of
// the graph. Piecewise-constant nodes (comparisons, floor division, loads) have tangent 0; at
// ties, minimum/maximum split the tangent evenly and abs' is 0 at 0, as PyTorch's formulas.
#include <cmath>
#include <optional>

#include "kiln/core/error.h"
#include "kiln/ops/nn/flex/expr.h"
#include "kiln/ops/nn/flex/trace_scope.h"

namespace kiln::flex {
namespace {

using Tangent = std::optional<Expr>;  // nullopt: 0

Tangent sum(const Tangent& a, const Tangent& b) {
  if (!a) return b;
  if (!b) return a;
  return *a + *b;
}

Tangent scaled(const Tangent& t, const Expr& by) {
  if (!t) return std::nullopt;
  return *t * by;
}

Tangent tangent_of(const Node& n, int32_t self, const std::vector<Tangent>& t) {
  const Expr x = Expr::at(self);
  auto arg = [&](int i) { return Expr::at(n.args[i]); };
  auto ta = [&](int i) -> const Tangent& { return t[n.args[i]]; };
  switch (n.op) {
    case Op::Neg:
      return ta(0) ? Tangent(-*ta(0)) : std::nullopt;
    case Op::Exp:
      return scaled(ta(0), x);
    case Op::Exp2:
      return scaled(ta(0), x * std::log(2.0));
    case Op::Log:
      return ta(0) ? Tangent(*ta(0) / arg(0)) : std::nullopt;
    case Op::Tanh:
      return scaled(ta(0), 1.0 - x * x);
    case Op::Abs:
      return ta(0) ? Tangent(where(arg(0) > 0, *ta(0), where(arg(0) < 0, -*ta(0), 0.0)))
                   : std::nullopt;
    case Op::Sqrt:
      return ta(0) ? Tangent(*ta(0) * 0.5 / x) : std::nullopt;
    case Op::Sigmoid:
      return scaled(ta(0), x * (1.0 - x));
    case Op::Add:
      return sum(ta(0), ta(1));
    case Op::Sub:
      return sum(ta(0), ta(1) ? Tangent(-*ta(1)) : std::nullopt);
    case Op::Mul:
      return sum(scaled(ta(0), arg(1)), scaled(ta(1), arg(0)));
    case Op::Div:
      return sum(ta(0) ? Tangent(*ta(0) / arg(1)) : std::nullopt,
                 ta(1) ? Tangent(-*ta(1) * x / arg(1)) : std::nullopt);
    case Op::Mod:  // a - b * floor(a / b)
      return sum(ta(0), ta(1) ? Tangent(-*ta(1) * floor_divide(arg(0), arg(1))) : std::nullopt);
    case Op::Min:
    case Op::Max: {
      if (!ta(0) && !ta(1)) return std::nullopt;
      const Expr a = ta(0) ? *ta(0) : Expr(0.0), b = ta(1) ? *ta(1) : Expr(0.0);
      const Expr first = n.op == Op::Min ? arg(0) < arg(1) : arg(0) > arg(1);
      return where(first, a, where(arg(0) == arg(1), (a + b) * 0.5, b));
    }
    case Op::Where: {
      if (!ta(1) && !ta(2)) return std::nullopt;
      return where(arg(0), ta(1) ? *ta(1) : Expr(0.0), ta(2) ? *ta(2) : Expr(0.0));
    }
    default:
      return std::nullopt;  // leaves, comparisons, logic, floor division, loads
  }
}

}  // namespace

Graph derivative(const Graph& g, int32_t wrt) {
  KILN_CHECK(wrt >= 0 && wrt < static_cast<int32_t>(g.nodes.size()), "flex::derivative: the node ",
             wrt, " is outside the graph of ", g.nodes.size(), " nodes");
  Graph d = g;
  std::vector<Tensor> unused;
  TraceScope scope(d, unused, "flex_attention");
  const size_t n = g.nodes.size();
  std::vector<Tangent> t(n);
  t[wrt] = Expr(1.0);
  for (size_t i = wrt + 1; i < n; ++i) t[i] = tangent_of(g.nodes[i], static_cast<int32_t>(i), t);
  d.result = (t[g.result] ? *t[g.result] : Expr(0.0)).id();
  return d;
}

}  // namespace kiln::flex
