#include "kiln/ops/nn/flex/expr.h"

#include <cmath>

#include "kiln/core/error.h"
#include "kiln/ops/nn/flex/trace_scope.h"

namespace kiln::flex {
namespace {

Kind arithmetic_kind(Kind a, Kind b) {
  return a == Kind::Float || b == Kind::Float ? Kind::Float : Kind::Int;
}

Expr unary(Op op, const Expr& a, Kind kind) { return Expr::append({op, kind, {a.id()}}); }
Expr binary(Op op, const Expr& a, const Expr& b, Kind kind) {
  return Expr::append({op, kind, {a.id(), b.id()}});
}
Expr arithmetic(Op op, const Expr& a, const Expr& b) {
  return binary(op, a, b, arithmetic_kind(a.kind(), b.kind()));
}
Expr compare(Op op, const Expr& a, const Expr& b) { return binary(op, a, b, Kind::Bool); }
Expr math(Op op, const Expr& a) { return unary(op, a, Kind::Float); }

Expr constant(double v, Kind kind) {
  Node n{Op::Constant, kind, {}};
  n.value = v;
  return Expr::append(std::move(n));
}

}  // namespace

Expr::Expr(double v) : Expr(constant(v, Kind::Float)) {}
Expr::Expr(int v) : Expr(constant(v, Kind::Int)) {}
Expr::Expr(int64_t v) : Expr(constant(static_cast<double>(v), Kind::Int)) {}
Expr::Expr(bool v) : Expr(constant(v ? 1 : 0, Kind::Bool)) {}

Kind Expr::kind() const { return TraceScope::current().graph->nodes.at(id_).kind; }

Expr Expr::append(Node n) {
  Graph& g = *TraceScope::current().graph;
  const char* op = TraceScope::current().op;
  for (int32_t a : n.args)
    KILN_CHECK(a >= 0 && a < static_cast<int32_t>(g.nodes.size()), op,
               ": an Expr from another score_mod or mask_mod was used in this one");
  g.nodes.push_back(std::move(n));
  return Expr(Id{}, static_cast<int32_t>(g.nodes.size() - 1));
}

Expr operator-(const Expr& a) {
  return unary(Op::Neg, a, a.kind() == Kind::Bool ? Kind::Int : a.kind());
}
Expr operator!(const Expr& a) { return unary(Op::Not, a, Kind::Bool); }
Expr operator+(const Expr& a, const Expr& b) { return arithmetic(Op::Add, a, b); }
Expr operator-(const Expr& a, const Expr& b) { return arithmetic(Op::Sub, a, b); }
Expr operator*(const Expr& a, const Expr& b) { return arithmetic(Op::Mul, a, b); }
Expr operator/(const Expr& a, const Expr& b) { return binary(Op::Div, a, b, Kind::Float); }
Expr operator%(const Expr& a, const Expr& b) { return arithmetic(Op::Mod, a, b); }
Expr operator<(const Expr& a, const Expr& b) { return compare(Op::Lt, a, b); }
Expr operator<=(const Expr& a, const Expr& b) { return compare(Op::Le, a, b); }
Expr operator>(const Expr& a, const Expr& b) { return compare(Op::Gt, a, b); }
Expr operator>=(const Expr& a, const Expr& b) { return compare(Op::Ge, a, b); }
Expr operator==(const Expr& a, const Expr& b) { return compare(Op::Eq, a, b); }
Expr operator!=(const Expr& a, const Expr& b) { return compare(Op::Ne, a, b); }
Expr operator&(const Expr& a, const Expr& b) { return compare(Op::And, a, b); }
Expr operator|(const Expr& a, const Expr& b) { return compare(Op::Or, a, b); }
Expr operator&&(const Expr& a, const Expr& b) { return a & b; }
Expr operator||(const Expr& a, const Expr& b) { return a | b; }
Expr floor_divide(const Expr& a, const Expr& b) { return arithmetic(Op::FloorDiv, a, b); }
Expr minimum(const Expr& a, const Expr& b) { return arithmetic(Op::Min, a, b); }
Expr maximum(const Expr& a, const Expr& b) { return arithmetic(Op::Max, a, b); }
Expr where(const Expr& c, const Expr& a, const Expr& b) {
  return Expr::append({Op::Where, arithmetic_kind(a.kind(), b.kind()), {c.id(), a.id(), b.id()}});
}
Expr exp(const Expr& a) { return math(Op::Exp, a); }
Expr exp2(const Expr& a) { return math(Op::Exp2, a); }
Expr log(const Expr& a) { return math(Op::Log, a); }
Expr tanh(const Expr& a) { return math(Op::Tanh, a); }
Expr abs(const Expr& a) { return unary(Op::Abs, a, a.kind() == Kind::Bool ? Kind::Int : a.kind()); }
Expr sqrt(const Expr& a) { return math(Op::Sqrt, a); }
Expr sigmoid(const Expr& a) { return math(Op::Sigmoid, a); }

Captured::Captured(Tensor t) : t_(std::move(t)) {
  KILN_CHECK(t_.defined(), "flex::capture: expected a defined tensor");
  KILN_CHECK(t_.dim() >= 1, "flex::capture: expected a tensor with at least one dim to index, got ",
             t_.sizes());
}

Captured::Index Captured::operator[](const Expr& index) const { return Index(this, {index}); }

Captured::Index Captured::Index::operator[](const Expr& index) const {
  std::vector<Expr> idx = idx_;
  idx.push_back(index);
  return Index(c_, std::move(idx));
}

Captured::Index::operator Expr() const {
  const Tensor& t = c_->tensor();
  TraceScope& scope = TraceScope::current();
  const char* op = scope.op;
  KILN_CHECK(static_cast<int64_t>(idx_.size()) == t.dim(), op, ": a captured tensor of shape ",
             t.sizes(), " is indexed with ", idx_.size(), " indices; expected ", t.dim());
  Node n{Op::Load,
         t.is_floating_point() ? Kind::Float
         : t.dtype() == kBool  ? Kind::Bool
                               : Kind::Int,
         {}};
  for (const Expr& i : idx_) {
    KILN_CHECK(i.kind() != Kind::Float, op,
               ": a captured tensor is indexed with a float Expr; indices are integers (q_idx, "
               "kv_idx, b, h and integer arithmetic on them)");
    n.args.push_back(i.id());
  }
  n.tensor = scope.capture(t);
  return Expr::append(std::move(n));
}

namespace {

template <class F, class... Leaves>
Traced trace_with(const char* op, Kind want, const F& f, Leaves... leaves) {
  Traced traced;
  auto graph = std::make_shared<Graph>();
  {
    TraceScope scope(*graph, traced.captured, op);
    const Expr result =
        f(Expr::append({leaves, leaves == Op::Score ? Kind::Float : Kind::Int, {}})...);
    graph->result = result.id();
    const Kind got = graph->nodes[result.id()].kind;
    KILN_CHECK(want != Kind::Bool || got == Kind::Bool, op,
               ": a mask_mod must return a bool Expr (a comparison), got a number");
    KILN_CHECK(want == Kind::Bool || got != Kind::Bool, op,
               ": a score_mod must return a number, got a bool Expr");
  }
  graph->captured = static_cast<int32_t>(traced.captured.size());
  traced.graph = std::move(graph);
  return traced;
}

}  // namespace

Traced trace(const ScoreMod& f, const char* op) {
  return trace_with(op, Kind::Float, f, Op::Score, Op::Batch, Op::Head, Op::QIdx, Op::KvIdx);
}

Traced trace(const MaskMod& f, const char* op) {
  return trace_with(op, Kind::Bool, f, Op::Batch, Op::Head, Op::QIdx, Op::KvIdx);
}

int32_t Graph::leaf(Op op) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].op == op) return static_cast<int32_t>(i);
  return -1;
}

}  // namespace kiln::flex
