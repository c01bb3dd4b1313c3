#pragma once
// The headers generated kernels include (kernel_prelude.h and what it includes), embedded in
// libkiln when it is built, so that kernels compile against exactly this library's definitions
// wherever it is installed.
#include <string_view>
#include <vector>

namespace kiln::compiler {

struct EmbeddedHeader {
  std::string_view path;  // "kiln/backend/scalar.h"
  std::string_view text;
};

const std::vector<EmbeddedHeader>& embedded_headers();

}  // namespace kiln::compiler
