#include "kiln/core/error.h"

namespace kiln::detail {
void throw_error(const std::string& msg) { throw Error(msg); }
}  // namespace kiln::detail
