#include "kiln/io/json_cursor.h"

#include <vector>

#include "kiln/io/utf8.h"

namespace kiln::io::detail {
namespace {

bool is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(int c) { return c >= '0' && c <= '9'; }

std::string hex(uint32_t v) {
  static constexpr char kHex[] = "0123456789abcdef";
  return {kHex[(v >> 12) & 15], kHex[(v >> 8) & 15], kHex[(v >> 4) & 15], kHex[v & 15]};
}

}  // namespace

void JsonCursor::skip_ws() {
  while (pos_ < text_.size() && is_ws(static_cast<unsigned char>(text_[pos_]))) ++pos_;
}

int JsonCursor::peek() {
  skip_ws();
  return pos_ < text_.size() ? static_cast<unsigned char>(text_[pos_]) : -1;
}

bool JsonCursor::consume(char c) {
  if (peek() != static_cast<unsigned char>(c)) return false;
  ++pos_;
  return true;
}

void JsonCursor::expect(char c, std::string_view context) {
  if (!consume(c)) syntax_error("expected '", c, "'", context, ", found ", found());
}

std::string JsonCursor::found() const {
  if (pos_ >= text_.size()) return "the end of the header";
  return quoted(text_.substr(pos_, 1));
}

void JsonCursor::expect_end() {
  if (peek() != -1) {
    syntax_error("unexpected ", found(), " after the JSON object (only spaces, tabs and line ",
                 "breaks may follow it)");
  }
}

uint32_t JsonCursor::hex4() {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i, ++pos_) {
    int c = pos_ < text_.size() ? static_cast<unsigned char>(text_[pos_]) : -1;
    int d = is_digit(c)              ? c - '0'
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                     : -1;
    if (d < 0) syntax_error("\\u must be followed by four hex digits, found ", found());
    v = v * 16 + static_cast<uint32_t>(d);
  }
  return v;
}

std::string JsonCursor::string(std::string_view context) {
  if (peek() != '"') syntax_error("expected a string", context, ", found ", found());
  ++pos_;
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(text_.data());
  const size_t n = text_.size();
  for (;;) {
    size_t run = pos_;  // plain ASCII needs no decoding: copy it in one piece
    while (run < n && p[run] >= 0x20 && p[run] < 0x80 && p[run] != '"' && p[run] != '\\') ++run;
    out.append(text_.data() + pos_, run - pos_);
    pos_ = run;
    if (pos_ >= n) syntax_error("unterminated string", context);
    const unsigned char c = p[pos_];
    if (c == '"') {
      ++pos_;
      return out;
    }
    if (c < 0x20) syntax_error("control byte ", found(), " in a string", context);
    if (c >= 0x80) {
      size_t len = utf8_sequence_length(p + pos_, n - pos_);
      if (len == 0) syntax_error("invalid UTF-8 byte ", found(), " in a string", context);
      out.append(text_.data() + pos_, len);
      pos_ += len;
      continue;
    }
    // A backslash escape.
    ++pos_;
    const int e = pos_ < n ? p[pos_] : -1;
    const char* simple = nullptr;
    switch (e) {
      case '"':
        simple = "\"";
        break;
      case '\\':
        simple = "\\";
        break;
      case '/':
        simple = "/";
        break;
      case 'b':
        simple = "\b";
        break;
      case 'f':
        simple = "\f";
        break;
      case 'n':
        simple = "\n";
        break;
      case 'r':
        simple = "\r";
        break;
      case 't':
        simple = "\t";
        break;
      case 'u':
        break;
      default:
        syntax_error("invalid escape \\", excerpt(text_.substr(pos_, 1)), " in a string", context);
    }
    ++pos_;
    if (simple) {
      out += simple;
      continue;
    }
    uint32_t cp = hex4();
    if (cp >= 0xDC00 && cp <= 0xDFFF) syntax_error("lone low surrogate \\u", hex(cp));
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (pos_ + 1 >= n || text_[pos_] != '\\' || text_[pos_ + 1] != 'u') {
        syntax_error("high surrogate \\u", hex(cp), " is not followed by a low surrogate");
      }
      pos_ += 2;
      uint32_t low = hex4();
      if (low < 0xDC00 || low > 0xDFFF) {
        syntax_error("high surrogate \\u", hex(cp), " is not followed by a low surrogate");
      }
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    append_utf8(out, cp);
  }
}

JsonNumber JsonCursor::number(std::string_view context) {
  const int first = peek();
  if (first != '-' && !is_digit(first)) {
    syntax_error("expected a number", context, ", found ", found());
  }
  const size_t start = pos_;
  const auto at = [&](size_t i) { return i < text_.size() ? text_[i] : '\0'; };
  JsonNumber num{JsonNumber::kUnsigned, 0, {}};
  if (at(pos_) == '-') {
    num.kind = JsonNumber::kNegative;
    ++pos_;
  }
  if (at(pos_) == '0') {
    ++pos_;
    if (is_digit(at(pos_))) syntax_error("a number may not have a leading zero");
  } else if (is_digit(at(pos_))) {
    while (is_digit(at(pos_))) {
      const uint64_t d = static_cast<uint64_t>(at(pos_) - '0');
      if (num.kind == JsonNumber::kUnsigned && (__builtin_mul_overflow(num.value, 10, &num.value) ||
                                                __builtin_add_overflow(num.value, d, &num.value))) {
        num.kind = JsonNumber::kTooLarge;
      }
      ++pos_;
    }
  } else {
    syntax_error("'-' must be followed by a digit");
  }
  bool integer = true;
  if (at(pos_) == '.') {
    ++pos_;
    if (!is_digit(at(pos_))) syntax_error("'.' must be followed by a digit");
    while (is_digit(at(pos_))) ++pos_;
    integer = false;
  }
  if (at(pos_) == 'e' || at(pos_) == 'E') {
    ++pos_;
    if (at(pos_) == '+' || at(pos_) == '-') ++pos_;
    if (!is_digit(at(pos_))) syntax_error("an exponent must have digits");
    while (is_digit(at(pos_))) ++pos_;
    integer = false;
  }
  if (!integer && num.kind != JsonNumber::kNegative) num.kind = JsonNumber::kNotInteger;
  num.text = text_.substr(start, pos_ - start);
  return num;
}

void JsonCursor::literal(std::string_view word) {
  if (text_.substr(pos_, word.size()) != word) syntax_error("unexpected ", found());
  pos_ += word.size();
}

// Iterative, so that hostile nesting cannot exhaust the stack; `in_object` records, for each
// container this call opened, whether it is an object (keys before values) or an array.
void JsonCursor::skip_value(int depth) {
  std::vector<bool> in_object;
  for (;;) {
    // A value is next.
    const int c = peek();
    if (c == '{' || c == '[') {
      if (depth + static_cast<int>(in_object.size()) >= max_depth_) {
        syntax_error("nested deeper than ", max_depth_, " levels");
      }
      ++pos_;
      in_object.push_back(c == '{');
      const char close = c == '{' ? '}' : ']';
      if (!consume(close)) {
        if (c == '{') {
          string(" as a key");
          expect(':', " after a key");
        }
        continue;
      }
      in_object.pop_back();
    } else if (c == '"') {
      string("");
    } else if (c == '-' || is_digit(c)) {
      number("");
    } else if (c == 't') {
      literal("true");
    } else if (c == 'f') {
      literal("false");
    } else if (c == 'n') {
      literal("null");
    } else {
      syntax_error("expected a value, found ", found());
    }
    // A value ended: close the containers it completes, or move on to the next element.
    for (;;) {
      if (in_object.empty()) return;
      if (consume(',')) {
        if (in_object.back()) {
          string(" as a key");
          expect(':', " after a key");
        }
        break;
      }
      expect(in_object.back() ? '}' : ']', " or ',' after a value");
      in_object.pop_back();
    }
  }
}

}  // namespace kiln::io::detail
