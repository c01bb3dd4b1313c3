#pragma once
// JsonCursor: a strict, single-pass reader of JSON text (RFC 8259) for documents whose shape the
// caller knows, such as a safetensors header. The caller asks for the value it expects next
// (an object's '{', a string, a number) and keeps only what it needs; nothing else is built, no
// step looks back, and nesting is bounded, so reading takes time linear in the text and memory no
// larger than what the caller keeps. Internal to kiln::io.
//
// Strict: strings must be well-formed UTF-8 without raw control bytes and with valid escapes
// (\uD800-\uDFFF only as surrogate pairs); numbers follow the JSON grammar; only space, tab, CR
// and LF count as whitespace (a NUL byte is an error). Errors are kiln::Errors through the
// Reporter, "the header is not valid JSON at byte N: ...", quoting at most a few bytes of input.
// A `context` argument is appended to such messages: empty, or starting with a space
// (" for tensor 'a'").
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kiln/io/reporter.h"

namespace kiln::io::detail {

struct JsonNumber {
  enum Kind { kUnsigned, kNegative, kNotInteger, kTooLarge };
  Kind kind;
  uint64_t value;         // when kind == kUnsigned
  std::string_view text;  // the number as written
};

class JsonCursor {
 public:
  // `max_depth`: how deeply skip_value() may nest, counting the containers the caller is in.
  JsonCursor(std::string_view text, const Reporter& r, int max_depth)
      : text_(text), r_(r), max_depth_(max_depth) {}

  // Skips whitespace and returns the next byte (0-255), or -1 at the end of the text.
  int peek();
  // Skips whitespace; consumes `c` and returns true when it is next.
  bool consume(char c);
  // Skips whitespace and consumes `c`, or fails with "expected <c> <context>".
  void expect(char c, std::string_view context);
  // Reads a string (the next token must be one) and returns it decoded.
  std::string string(std::string_view context);
  // Reads a number (the next token must be one).
  JsonNumber number(std::string_view context);
  // Reads and discards any value; `depth` is the number of containers the cursor is inside.
  void skip_value(int depth);
  // Fails unless only whitespace remains.
  void expect_end();

  size_t offset() const { return pos_; }
  // "the header is not valid JSON at byte <offset>: " followed by the arguments.
  template <class... Args>
  [[noreturn]] void syntax_error(const Args&... args) const {
    r_.fail("the header is not valid JSON at byte ", pos_, ": ", args...);
  }
  // A short, printable description of the input at the cursor ("'x'", "end of header").
  std::string found() const;

 private:
  void skip_ws();
  uint32_t hex4();
  void literal(std::string_view word);

  std::string_view text_;
  size_t pos_ = 0;
  const Reporter& r_;
  int max_depth_;
};

}  // namespace kiln::io::detail
