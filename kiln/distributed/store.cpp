#include "kiln/distributed/store.h"

#include "kiln/core/error.h"

namespace kiln::distributed {

std::string quoted_keys(const std::vector<std::string>& keys) {
  constexpr size_t kMaxKeys = 8;
  std::string text;
  for (size_t i = 0; i < keys.size() && i < kMaxKeys; ++i)
    text += detail::str_cat(i == 0 ? "" : ", ", '"', keys[i], '"');
  if (keys.size() > kMaxKeys) text += detail::str_cat(" and ", keys.size() - kMaxKeys, " more");
  return text;
}

}  // namespace kiln::distributed
