#pragma once
// UTF-8 checks, and untrusted text made safe to show in an error message (internal to kiln::io).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::io::detail {

// The length (1-4) of the well-formed UTF-8 sequence that starts `p[0..n)`, n > 0, or 0 when it
// is malformed: a stray continuation byte, an overlong form, a surrogate, a code point above
// U+10FFFF or a sequence cut short.
size_t utf8_sequence_length(const unsigned char* p, size_t n);

// The index of the first byte of `s` that is not part of well-formed UTF-8, if any.
std::optional<size_t> find_invalid_utf8(std::string_view s);

// Appends code point `cp` (at most U+10FFFF, not a surrogate) as UTF-8.
void append_utf8(std::string& out, uint32_t cp);

// `s` for an error message: at most about `max_bytes` of it, control bytes and bytes that are not
// UTF-8 written as \xNN, followed by "... (N bytes)" when it was cut. So a message never embeds an
// unbounded amount of input, nor bytes that would garble a terminal or a log.
std::string excerpt(std::string_view s, size_t max_bytes = 64);
// excerpt(s) in single quotes.
std::string quoted(std::string_view s, size_t max_bytes = 64);

}  // namespace kiln::io::detail
