// A Graph as text, and back: "captured N", one line per node ("%3 = add float %1 %2",
// "%0 = constant int 5", "%4 = load float t0 %1 %2"), then "return %7". parse() checks every
// field, so that a graph stored in a file (export) cannot index outside itself.
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "kiln/core/error.h"
#include "kiln/ops/nn/flex/expr.h"

namespace kiln::flex {
namespace {

constexpr int kOps = static_cast<int>(Op::Where) + 1;

const char* kind_name(Kind k) {
  return k == Kind::Bool ? "bool" : k == Kind::Int ? "int" : "float";
}

int arity(Op op) {
  if (op <= Op::Constant) return 0;
  if (op == Op::Load) return -1;  // one per captured tensor dim
  if (op <= Op::Sigmoid) return 1;
  if (op <= Op::Or) return 2;
  return 3;
}

// A line as an error message quotes it: whole when short, else its start and its length (the
// text may come from a damaged or hostile file).
std::string quoted(const std::string& line) {
  constexpr size_t kMaxQuoted = 200;
  if (line.size() <= kMaxQuoted) return "'" + line + "'";
  return "'" + line.substr(0, kMaxQuoted) + "...' (" + std::to_string(line.size()) + " bytes)";
}

[[noreturn]] void bad(const std::string& line, const char* what) {
  detail::throw_error(detail::str_cat("flex::Graph::parse: cannot read the expression line ",
                                      quoted(line), ": ", what));
}

int32_t node_ref(const std::string& word, const std::string& line, char prefix) {
  int32_t v = -1;
  if (word.size() < 2 || word[0] != prefix ||
      std::from_chars(word.data() + 1, word.data() + word.size(), v).ec != std::errc() || v < 0)
    bad(line, "expected a reference like %3 or t0");
  return v;
}

}  // namespace

const char* op_name(Op op) {
  static const char* const names[] = {
      "score", "b",    "h",        "q_idx", "kv_idx", "constant", "load",    "neg", "not",
      "exp",   "exp2", "log",      "tanh",  "abs",    "sqrt",     "sigmoid", "add", "sub",
      "mul",   "div",  "floordiv", "mod",   "min",    "max",      "lt",      "le",  "gt",
      "ge",    "eq",   "ne",       "and",   "or",     "where"};
  return names[static_cast<int>(op)];
}

std::string Graph::to_string() const {
  std::ostringstream os;
  os << "captured " << captured << '\n';
  char buf[32];
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    os << '%' << i << " = " << op_name(n.op) << ' ' << kind_name(n.kind);
    if (n.op == Op::Constant) {
      std::snprintf(buf, sizeof buf, "%.17g", n.value);
      os << ' ' << buf;
    }
    if (n.op == Op::Load) os << " t" << n.tensor;
    for (int32_t a : n.args) os << " %" << a;
    os << '\n';
  }
  os << "return %" << result << '\n';
  return os.str();
}

Graph Graph::parse(const std::string& text) {
  Graph g;
  std::istringstream in(text);
  std::string line;
  bool done = false;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    KILN_CHECK(!done, "flex::Graph::parse: cannot read the expression line ", quoted(line),
               ": after return");
    std::istringstream words(line);
    std::string first;
    words >> first;
    if (first == "captured") {
      if (!(words >> g.captured) || g.captured < 0 || g.captured > 1024 || !g.nodes.empty())
        bad(line, "expected 'captured N' first, N in [0, 1024]");
      continue;
    }
    if (first == "return") {
      std::string ref;
      words >> ref;
      g.result = node_ref(ref, line, '%');
      if (g.result >= static_cast<int32_t>(g.nodes.size())) bad(line, "no such node");
      done = true;
      continue;
    }
    if (node_ref(first, line, '%') != static_cast<int32_t>(g.nodes.size()))
      bad(line, "out of order");
    std::string eq, op_word, kind_word;
    words >> eq >> op_word >> kind_word;
    if (eq != "=") bad(line, "expected '='");
    Node n{Op::Score, Kind::Float, {}};
    int op = 0;
    while (op < kOps && op_word != op_name(static_cast<Op>(op))) ++op;
    if (op == kOps) bad(line, "unknown op");
    n.op = static_cast<Op>(op);
    if (kind_word == "bool")
      n.kind = Kind::Bool;
    else if (kind_word == "int")
      n.kind = Kind::Int;
    else if (kind_word != "float")
      bad(line, "unknown kind");
    std::string word;
    if (n.op == Op::Constant) {  // strtod: "inf", "-inf" and "nan" are values too
      words >> word;
      char* end = nullptr;
      n.value = std::strtod(word.c_str(), &end);
      if (word.empty() || end != word.c_str() + word.size())
        bad(line, "expected the constant's value");
    }
    if (n.op == Op::Load) {
      words >> word;
      n.tensor = node_ref(word, line, 't');
      if (n.tensor >= g.captured) bad(line, "no such captured tensor");
    }
    while (words >> word) {
      const int32_t a = node_ref(word, line, '%');
      if (a >= static_cast<int32_t>(g.nodes.size())) bad(line, "an operand that is not earlier");
      n.args.push_back(a);
    }
    const int want = arity(n.op);
    if (want >= 0 ? static_cast<int>(n.args.size()) != want : n.args.empty())
      bad(line, "wrong number of operands");
    g.nodes.push_back(std::move(n));
  }
  KILN_CHECK(done, "flex::Graph::parse: an expression text without a 'return' line");
  return g;
}

}  // namespace kiln::flex
