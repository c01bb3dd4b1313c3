#include "kiln/ops/lowering.h"

#include <sstream>

namespace kiln::lowering {
namespace {

constexpr std::pair<std::string_view, Lowering::Kind> kKinds[] = {
    {"reduction", Lowering::Kind::Reduction}, {"scan", Lowering::Kind::Scan},
    {"extern", Lowering::Kind::Extern},       {"inplace", Lowering::Kind::InPlace},
    {"sparse", Lowering::Kind::Sparse},       {"pointwise", Lowering::Kind::Pointwise},
};

void print(std::ostream& os, const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::Input:
      os << e.dtype << "(in" << e.input << ")";
      return;
    case Expr::Kind::Constant:
      os << e.value;
      return;
    case Expr::Kind::Cast:
      os << e.dtype << "(";
      print(os, *e.args[0]);
      os << ")";
      return;
    case Expr::Kind::Call:
      os << e.functor;
      if (!e.params.empty()) {
        os << "{";
        for (size_t i = 0; i < e.params.size(); ++i) os << (i ? ", " : "") << e.params[i];
        os << "}";
      }
      os << "(";
      for (size_t i = 0; i < e.args.size(); ++i) {
        if (i) os << ", ";
        print(os, *e.args[i]);
      }
      os << ")";
      return;
  }
}

}  // namespace

std::string Expr::str() const {
  std::ostringstream os;
  print(os, *this);
  return os.str();
}

ExprPtr input(int i, ScalarType dtype) {
  return std::make_shared<Expr>(Expr{Expr::Kind::Input, dtype, i, 0, {}, {}, {}});
}

ExprPtr constant(double value, ScalarType dtype) {
  return std::make_shared<Expr>(Expr{Expr::Kind::Constant, dtype, -1, value, {}, {}, {}});
}

ExprPtr cast(ExprPtr x, ScalarType dtype) {
  if (x->dtype == dtype) return x;
  return std::make_shared<Expr>(Expr{Expr::Kind::Cast, dtype, -1, 0, {}, {}, {std::move(x)}});
}

ExprPtr call(std::string functor, std::vector<double> params, std::vector<ExprPtr> args,
             ScalarType dtype) {
  return std::make_shared<Expr>(Expr{Expr::Kind::Call, dtype, -1, 0, std::move(functor),
                                     std::move(params), std::move(args)});
}

Lowering Lowering::parse(std::string_view text) {
  Lowering l;
  if (text == "view") {
    l.kind = Kind::View;
    return l;
  }
  const size_t colon = text.find(':');
  KILN_CHECK(colon != std::string_view::npos && colon + 1 < text.size(), "register_op: lowering \"",
             text,
             "\" is not \"view\" or \"<kind>:<name>\" (kinds: reduction, scan, extern, inplace, "
             "sparse)");
  const std::string_view kind = text.substr(0, colon);
  for (const auto& [k, v] : kKinds) {
    if (k != kind) continue;
    KILN_CHECK(v != Kind::Pointwise, "register_op: pointwise lowering \"", text,
               "\" must be a builder (lowering::Lowering::of), not text");
    l.kind = v;
    l.name = std::string(text.substr(colon + 1));
    return l;
  }
  KILN_FAIL("register_op: lowering \"", text, "\" has an unknown kind \"", kind,
            "\" (kinds: reduction, scan, extern, inplace, sparse)");
}

Lowering Lowering::of(std::string functor, PointwiseFn fn) {
  Lowering l;
  l.kind = Kind::Pointwise;
  l.name = std::move(functor);
  l.pointwise = std::move(fn);
  return l;
}

std::string Lowering::str() const {
  if (kind == Kind::None) return "";
  if (kind == Kind::View) return "view";
  for (const auto& [k, v] : kKinds)
    if (v == kind) return std::string(k) + ":" + name;
  return "";
}

}  // namespace kiln::lowering
