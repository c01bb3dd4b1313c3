#include "kiln/func/batched.h"

#include "kiln/core/error.h"

namespace kiln::func::detail {
namespace {
thread_local int64_t t_level = 0;
}

std::string Batched::describe() const {
  return "a tensor batched by vmap (level " + std::to_string(level) + ", batch dim " +
         std::to_string(bdim) + " of physical sizes " + ::kiln::detail::str_cat(value.sym_sizes()) +
         ")";
}

Tensor make_batched(Tensor value, int64_t bdim, int64_t level) {
  SymShape sizes = value.sym_sizes().sym_vec();
  KILN_CHECK(bdim >= 0 && bdim < static_cast<int64_t>(sizes.size()), "vmap: batch dim ", bdim,
             " is out of range for a tensor of ", sizes.size(), " dims");
  sizes.erase(sizes.begin() + bdim);
  SymShape strides = contiguous_strides(sizes);
  auto impl = std::make_shared<TensorImpl>(StorageImpl::meta(value.device()), value.dtype(),
                                           std::move(sizes), std::move(strides), 0);
  impl->set_extension(std::make_shared<Batched>(std::move(value), bdim, level));
  return Tensor(std::move(impl));
}

const Batched* batched_at(const Tensor& t, int64_t level) {
  if (!t.defined()) return nullptr;
  const auto* b = dynamic_cast<const Batched*>(t.impl()->extension().get());
  return b && b->level == level ? b : nullptr;
}

LevelGuard::LevelGuard() : level_(++t_level) {}
LevelGuard::~LevelGuard() { --t_level; }

}  // namespace kiln::func::detail
