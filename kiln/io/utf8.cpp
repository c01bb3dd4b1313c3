#include "kiln/io/utf8.h"

namespace kiln::io::detail {

size_t utf8_sequence_length(const unsigned char* p, size_t n) {
  const unsigned char c = p[0];
  if (c < 0x80) return 1;
  size_t len;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3, cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4, cp = c & 0x07;
  } else {
    return 0;  // a continuation byte, an overlong lead (C0, C1) or above U+10FFFF (F5-FF)
  }
  if (n < len) return 0;
  for (size_t i = 1; i < len; ++i) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return len;
}

std::optional<size_t> find_invalid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    size_t len = utf8_sequence_length(p + i, s.size() - i);
    if (len == 0) return i;
    i += len;
  }
  return std::nullopt;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string excerpt(std::string_view s, size_t max_bytes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::string out;
  size_t i = 0;
  while (i < s.size() && out.size() < max_bytes) {
    size_t len = utf8_sequence_length(p + i, s.size() - i);
    if (len == 1 && p[i] >= 0x20 && p[i] != 0x7F) {
      out += static_cast<char>(p[i]);
    } else if (len > 1) {
      out.append(s.data() + i, len);
    } else {
      len = 1;
      out += "\\x";
      out += kHex[p[i] >> 4];
      out += kHex[p[i] & 0xF];
    }
    i += len;
  }
  if (i < s.size()) {
    out += "... (";
    out += std::to_string(s.size());
    out += " bytes)";
  }
  return out;
}

// Built by appending: GCC 12 warns (-Wrestrict, a false positive) on "'" + std::string&&.
std::string quoted(std::string_view s, size_t max_bytes) {
  std::string out(1, '\'');
  out += excerpt(s, max_bytes);
  out += '\'';
  return out;
}

}  // namespace kiln::io::detail
