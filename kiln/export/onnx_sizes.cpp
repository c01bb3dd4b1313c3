// Symbolic sizes in ONNX: each symbol is read from an input's shape (Shape with start/end), and a
// size expression, as SymInt::str() prints it ("4*batch+1", "(seq//2)", "min(seq, 8)"), becomes
// int64 arithmetic on those. All values are int64 [1].
#include <cctype>
#include <functional>

#include "kiln/export/onnx_emitter.h"

namespace kiln::onnx_detail {

namespace {

// Recursive descent over SymInt::str()'s grammar, emitting one node per operation:
//   expr   := ['-'] term (('+' | '-') term)*
//   term   := factor (('*' | '//' | '%') factor)*
//   factor := integer | symbol | ('min' | 'max') '(' expr ',' expr ')' | '(' expr ')'
class SizeParser {
 public:
  SizeParser(Emitter& e, std::string_view text,
             const std::function<std::string(const std::string&)>& symbol)
      : e_(e), text_(text), symbol_(symbol) {}

  std::string parse() {
    std::string r = expr();
    skip_spaces();
    check(pos_ == text_.size(), "unexpected text");
    return r;
  }

 private:
  std::string expr() {
    skip_spaces();
    std::string r;
    if (eat("-")) {
      r = e_.op("Neg", {term()});
    } else {
      r = term();
    }
    for (;;) {
      if (eat("+")) {
        r = e_.op("Add", {r, term()});
      } else if (eat("-")) {
        r = e_.op("Sub", {r, term()});
      } else {
        return r;
      }
    }
  }

  std::string term() {
    std::string r = factor();
    for (;;) {
      // Sizes are never negative, so ONNX's truncating integer Div is floor division here; Mod
      // with fmod=0 takes the divisor's sign, as Python's % does.
      if (eat("*")) {
        r = e_.op("Mul", {r, factor()});
      } else if (eat("//")) {
        r = e_.op("Div", {r, factor()});
      } else if (eat("%")) {
        r = e_.op("Mod", {r, factor()}, {{"fmod", int64_t{0}}});
      } else {
        return r;
      }
    }
  }

  std::string factor() {
    skip_spaces();
    check(pos_ < text_.size(), "expected a term");
    const char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])))
        v = v * 10 + (text_[pos_++] - '0');
      return e_.ints({v});
    }
    if (eat("(")) {
      std::string r = expr();
      check(eat(")"), "expected ')'");
      return r;
    }
    check(std::isalpha(static_cast<unsigned char>(c)) || c == '_', "expected a term");
    const size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      ++pos_;
    const std::string name(text_.substr(start, pos_ - start));
    if ((name == "min" || name == "max") && eat("(")) {
      const std::string a = expr();
      check(eat(","), "expected ','");
      const std::string b = expr();
      check(eat(")"), "expected ')'");
      return e_.op(name == "min" ? "Min" : "Max", {a, b});
    }
    return symbol_(name);
  }

  bool eat(std::string_view token) {
    skip_spaces();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  void skip_spaces() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }
  void check(bool ok, const char* what) {
    KILN_CHECK(ok, "onnx::save: cannot read the size expression \"", text_, "\": ", what,
               " at offset ", pos_);
  }

  Emitter& e_;
  std::string_view text_;
  const std::function<std::string(const std::string&)>& symbol_;
  size_t pos_ = 0;
};

}  // namespace

void Emitter::find_symbol_sources() {
  const compiler::Graph& g = program_.graph();
  for (const SymInt& s : program_.symbols()) {
    const std::string name = s.str();
    for (size_t i = 0; i < g.inputs.size() && !symbol_sources_.count(name); ++i) {
      const SymShape& sizes = g.values.at(g.inputs[i]).sizes;
      for (size_t d = 0; d < sizes.size(); ++d) {
        if (sizes[d].is_symbolic() && sizes[d].str() == name) {
          symbol_sources_.emplace(name, std::pair{i, static_cast<int64_t>(d)});
          break;
        }
      }
    }
  }
}

std::string Emitter::symbol(const std::string& name) {
  auto it = symbol_sources_.find(name);
  KILN_CHECK(it != symbol_sources_.end(), "onnx::save: the size symbol \"", name,
             "\" is not a dim of any input, so the model cannot compute it");
  const auto [input, dim] = it->second;
  return op("Shape", {input_name(input)}, {{"start", dim}, {"end", dim + 1}});
}

std::string Emitter::size(const SymInt& s) {
  if (!s.is_symbolic()) return ints({s.maybe_int().value()});
  const std::string text = s.str();
  auto it = sizes_.find(text);
  if (it != sizes_.end()) return it->second;
  const std::function<std::string(const std::string&)> lookup = [this](const std::string& name) {
    auto cached = sizes_.find(name);
    if (cached != sizes_.end()) return cached->second;
    std::string r = symbol(name);
    sizes_.emplace(name, r);
    return r;
  };
  std::string r = SizeParser(*this, text, lookup).parse();
  sizes_.emplace(text, r);
  return r;
}

std::string Emitter::shape(const SymShape& s) {
  std::vector<std::string> parts;
  std::vector<int64_t> run;  // static sizes not yet emitted
  for (const SymInt& d : s) {
    if (!d.is_symbolic()) {
      run.push_back(d.maybe_int().value());
      continue;
    }
    if (!run.empty()) parts.push_back(ints(run));
    run.clear();
    parts.push_back(size(d));
  }
  if (!run.empty() || parts.empty()) parts.push_back(ints(run));
  if (parts.size() == 1) return parts[0];
  return op("Concat", parts, {{"axis", int64_t{0}}});
}

}  // namespace kiln::onnx_detail
