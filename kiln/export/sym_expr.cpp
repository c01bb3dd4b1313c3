#include "kiln/export/sym_expr.h"

#include <cctype>

#include "kiln/core/size_math.h"

namespace kiln::export_detail {

namespace {

constexpr size_t kMaxLength = 4096;
constexpr int kMaxDepth = 32;

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return ident_start(c) || std::isdigit(static_cast<unsigned char>(c)); }

class Parser {
 public:
  Parser(std::string_view text, const std::map<std::string, SymInt>& symbols,
         const io::detail::Reporter& r)
      : text_(text), symbols_(symbols), r_(r) {}

  SymInt parse() {
    SymInt v = expr(0);
    skip_ws();
    if (pos_ != text_.size()) fail("unexpected '", text_[pos_], "'");
    return v;
  }

 private:
  template <class... Args>
  [[noreturn]] void fail(const Args&... args) const {
    r_.fail("the size expression '", text_, "' is not valid at character ", pos_, ": ", args...);
  }
  void skip_ws() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }
  bool take(std::string_view s) {
    skip_ws();
    if (text_.substr(pos_, s.size()) != s) return false;
    pos_ += s.size();
    return true;
  }
  void expect(char c) {
    if (!take(std::string_view(&c, 1))) fail("expected '", c, "'");
  }

  SymInt expr(int depth) {
    if (depth > kMaxDepth) fail("nested more than ", kMaxDepth, " deep");
    SymInt v = term(depth);
    for (;;) {
      if (take("+")) {
        v = v + term(depth);
      } else if (take("-")) {
        v = v - term(depth);
      } else {
        return v;
      }
    }
  }
  SymInt term(int depth) {
    SymInt v = unary(depth);
    for (;;) {
      if (take("//")) {
        v = SymInt::floordiv(v, nonzero(unary(depth)));
      } else if (take("*")) {
        v = v * unary(depth);
      } else if (take("%")) {
        v = SymInt::mod(v, nonzero(unary(depth)));
      } else {
        return v;
      }
    }
  }
  SymInt nonzero(SymInt v) {
    if (v.maybe_int() == 0) fail("division by zero");
    return v;
  }
  SymInt unary(int depth) {
    if (take("-")) return -unary(depth + 1);
    return atom(depth);
  }
  SymInt atom(int depth) {
    skip_ws();
    if (pos_ >= text_.size()) fail("unexpected end");
    const char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      SymInt v = expr(depth + 1);
      expect(')');
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        const int64_t digit = text_[pos_++] - '0';
        if (v > (INT64_MAX - digit) / 10) fail("the number does not fit in 64 bits");
        v = v * 10 + digit;
      }
      return SymInt(v);
    }
    if (!ident_start(c)) fail("unexpected '", c, "'");
    const size_t start = pos_;
    while (pos_ < text_.size() && ident_char(text_[pos_])) ++pos_;
    const std::string name(text_.substr(start, pos_ - start));
    if (name == "min" || name == "max") {
      expect('(');
      SymInt a = expr(depth + 1);
      expect(',');
      SymInt b = expr(depth + 1);
      expect(')');
      return name == "min" ? SymInt::min(a, b) : SymInt::max(a, b);
    }
    auto it = symbols_.find(name);
    if (it == symbols_.end()) fail("'", name, "' is not a symbol of the program");
    return it->second;
  }

  std::string_view text_;
  const std::map<std::string, SymInt>& symbols_;
  const io::detail::Reporter& r_;
  size_t pos_ = 0;
};

}  // namespace

SymInt parse_sym_expr(std::string_view text, const std::map<std::string, SymInt>& symbols,
                      const io::detail::Reporter& r) {
  KILN_IO_CHECK(r, text.size() <= kMaxLength, "a size expression is longer than ", kMaxLength,
                " characters");
  try {
    return Parser(text, symbols, r).parse();
  } catch (const OverflowError&) {
    r.fail("the size expression '", text, "' overflows 64 bits");
  }
}

bool is_symbol_name(std::string_view name) {
  if (name.empty() || !ident_start(name[0]) || name == "min" || name == "max") return false;
  for (char c : name)
    if (!ident_char(c)) return false;
  return true;
}

}  // namespace kiln::export_detail
