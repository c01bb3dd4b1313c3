#include "kiln/autograd/saved_tensor.h"

#include "kiln/autograd/node.h"
#include "kiln/core/autograd_meta.h"
#include "kiln/core/error.h"

namespace kiln::autograd {
namespace {
// The same data and geometry without autograd identity (a transform's wrapped tensor stays
// wrapped: a vmap's batched output saved for backward is still batched).
Tensor alias_of(const Tensor& t) {
  const TensorImpl& i = *t.impl();
  auto impl = std::make_shared<TensorImpl>(i.storage(), i.dtype(), i.sym_sizes(), i.sym_strides(),
                                           i.sym_storage_offset());
  impl->set_extension(i.extension());
  return Tensor(std::move(impl));
}
}  // namespace

SavedTensor::SavedTensor(const Tensor& t, bool is_output) {
  if (!t.defined()) return;
  defined_ = true;
  is_output_ = is_output;
  version_ = t.impl()->storage()->version();
  if (is_output) {
    data_ = alias_of(t);
    output_nr_ = t.output_nr();
    requires_grad_ = t.requires_grad();
  } else {
    data_ = t;
  }
}

Tensor SavedTensor::unpack(const std::shared_ptr<Node>& owner, const char* who) const {
  if (!defined_) return Tensor();
  KILN_CHECK(!released_,
             "Trying to backward through the graph a second time (or directly access saved "
             "tensors after they have already been freed). Saved intermediate values of the "
             "graph are freed when you call .backward() or autograd::grad(). Specify "
             "retain_graph=true if you need to backward through the graph a second time.");
  uint32_t now = data_.impl()->storage()->version();
  KILN_CHECK(now == version_,
             "one of the variables needed for gradient computation has been modified by an "
             "inplace operation: [",
             data_.toString(), " ", data_.sym_sizes(), "], which is input to ", who,
             ", is at version ", now, "; expected version ", version_, " instead.");
  if (!is_output_) return data_;
  Tensor t = alias_of(data_);
  if (requires_grad_ && owner) {
    AutogradMeta& m = t.impl()->ensure_autograd_meta();
    m.requires_grad = true;
    m.grad_fn = owner;
    m.output_nr = output_nr_;
  }
  return t;
}

}  // namespace kiln::autograd
