#pragma once
// Size expressions as text: what SymInt::str() prints ("4*batch+1", "(seq//2)", "min(seq, 8)"),
// read back into SymInts over a shape environment's symbols, by name. Internal to kiln/export.
#include <map>
#include <string>
#include <string_view>

#include "kiln/core/symint.h"
#include "kiln/io/reporter.h"

namespace kiln::export_detail {

// Parses `text` (integers, the named symbols, + - * // %, min(a, b), max(a, b), parentheses).
// Errors go through `r`; nesting and length are bounded.
SymInt parse_sym_expr(std::string_view text, const std::map<std::string, SymInt>& symbols,
                      const io::detail::Reporter& r);

// True for a name a symbol may have: an identifier that is not "min" or "max".
bool is_symbol_name(std::string_view name);

}  // namespace kiln::export_detail
