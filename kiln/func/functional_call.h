#pragma once
// functional_call(module, params_and_buffers, args...): module's forward with some of its
// parameters and buffers replaced by the given tensors, by dotted name (PyTorch's
// torch.func.functional_call). The module is not changed: a dispatch mode hands the given
// tensors to every op that reads the module's own.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/core/dispatch.h"
#include "kiln/func/tree.h"

namespace kiln::nn {
class Module;
}

namespace kiln::func {

namespace detail {
// The mode that substitutes `named` for module's tensors of those names (an unknown name is an
// error listing the module's names).
std::shared_ptr<DispatchMode> substitution_mode(
    const nn::Module& module, const std::vector<std::pair<std::string, Tensor>>& named);

inline std::vector<std::pair<std::string, Tensor>> named_tensors(
    const std::map<std::string, Tensor>& m) {
  return {m.begin(), m.end()};
}
inline std::vector<std::pair<std::string, Tensor>> named_tensors(
    const OrderedDict<std::string, Tensor>& d) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& item : d.items()) out.emplace_back(item.key(), item.value());
  return out;
}
}  // namespace detail

// `module` is a ModuleHolder (nn::Linear) or a std::shared_ptr to a module with forward().
template <class M, class Params, class... A>
auto functional_call(M& module, const Params& params_and_buffers, const A&... args) {
  ModeGuard guard(detail::substitution_mode(*module, detail::named_tensors(params_and_buffers)));
  return module->forward(args...);
}

}  // namespace kiln::func
