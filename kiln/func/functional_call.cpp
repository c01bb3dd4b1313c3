#include "kiln/func/functional_call.h"

#include <unordered_map>

#include "kiln/core/error.h"
#include "kiln/nn/module.h"

namespace kiln::func::detail {
namespace {

class SubstitutionMode final : public DispatchMode {
 public:
  explicit SubstitutionMode(std::unordered_map<const TensorImpl*, Tensor> map)
      : map_(std::move(map)) {}
  std::vector<Tensor> handle(const OpDef& op, const std::vector<Tensor>& inputs,
                             const Attrs& attrs) override {
    std::vector<Tensor> args = inputs;
    for (Tensor& t : args) {
      if (!t.defined()) continue;
      auto it = map_.find(t.impl());
      if (it != map_.end()) t = it->second;
    }
    return call_op(op, std::move(args), attrs);
  }

 private:
  std::unordered_map<const TensorImpl*, Tensor> map_;
};

}  // namespace

std::shared_ptr<DispatchMode> substitution_mode(
    const nn::Module& module, const std::vector<std::pair<std::string, Tensor>>& named) {
  std::unordered_map<std::string, Tensor> own;
  for (const auto& [name, t] : module.named_tensors()) own.emplace(name, t);
  std::unordered_map<const TensorImpl*, Tensor> map;
  for (const auto& [name, t] : named) {
    auto it = own.find(name);
    if (it == own.end()) {
      std::string names;
      for (const auto& [n, unused] : module.named_tensors())
        names += (names.empty() ? "" : ", ") + n;
      KILN_FAIL("functional_call: ", module.name(), " has no parameter or buffer named '", name,
                "'; its names are: ", names);
    }
    KILN_CHECK(t.defined() && t.sym_sizes() == it->second.sym_sizes(), "functional_call: '", name,
               "' of ", module.name(), " has sizes ", it->second.sym_sizes(),
               ", but the tensor "
               "given for it has ",
               t.defined() ? ::kiln::detail::str_cat(t.sym_sizes()) : "none");
    map[it->second.impl()] = t;
  }
  return std::make_shared<SubstitutionMode>(std::move(map));
}

}  // namespace kiln::func::detail
