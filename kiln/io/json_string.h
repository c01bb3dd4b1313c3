#pragma once
// A string as a JSON string literal: quoted, with '"', '\' and control bytes escaped; other bytes
// (UTF-8) as they are. Internal to Kiln's JSON writers.
#include <string>
#include <string_view>

namespace kiln::io::detail {

std::string json_string(std::string_view s);

}  // namespace kiln::io::detail
