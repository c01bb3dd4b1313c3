#include "kiln/ops/registry.h"

#include "kiln/ops/inplace.h"

#include <algorithm>
#include <map>
#include <memory>

namespace kiln {
namespace {
std::map<std::string, std::unique_ptr<OpDef>, std::less<>>& table() {
  static std::map<std::string, std::unique_ptr<OpDef>, std::less<>> t;
  return t;
}
}  // namespace

OpDef& register_op(std::string name) {
  auto& t = table();
  KILN_CHECK(t.find(name) == t.end(), "register_op: '", name, "' is registered twice");
  auto def = std::make_unique<OpDef>();
  def->name = name;
  OpDef& ref = *def;
  t.emplace(std::move(name), std::move(def));
  return ref;
}

void set_kernel(std::string_view name, DeviceType device, KernelFn kernel) {
  KILN_CHECK(device != DeviceType::CPU, "set_kernel: ", name,
             ": CPU kernels are given where the op is registered");
  OpDef& op = const_cast<OpDef&>(get_op(name));
  op.kernel(device, std::move(kernel));
  set_inplace_kernel(op, device);
}

const OpDef* find_op(std::string_view name) {
  auto& t = table();
  auto it = t.find(name);
  return it == t.end() ? nullptr : it->second.get();
}

const OpDef& get_op(std::string_view name) {
  const OpDef* op = find_op(name);
  KILN_CHECK(op != nullptr, "get_op: no op named '", name, "' is registered");
  return *op;
}

std::vector<const OpDef*> all_ops() {
  std::vector<const OpDef*> out;
  for (auto& [n, def] : table()) out.push_back(def.get());
  return out;
}

Tensor BatchCall::batch_in_front(size_t i) const {
  const Tensor& t = values.at(i);
  const std::optional<int64_t> bdim = bdims.at(i);
  return !bdim || *bdim == 0 ? t : t.movedim({*bdim}, {0});
}

Tensor BatchCall::batched(size_t i) const {
  if (bdims.at(i)) return batch_in_front(i);
  const Tensor& t = values[i];
  SymShape sizes = t.sym_sizes().sym_vec();
  sizes.insert(sizes.begin(), SymInt(batch_size));
  return t.unsqueeze(0).expand(sizes);
}

}  // namespace kiln
