// In-place view ops (squeeze_, unsqueeze_, t_, transpose_, as_strided_) and resize_: they change
// the tensor's own sizes and strides and keep its storage, as libtorch's do.
#include "kiln/core/autograd_meta.h"
#include "kiln/core/grad_mode.h"
#include "kiln/ops/ops.h"

namespace kiln {
namespace {

// Makes `self` take the geometry of `view`, a view of self made by the out-of-place op. Under
// autograd, as in PyTorch: a leaf that requires grad is refused, and a tensor with history takes
// the view's grad_fn (whose backward leads to self's old history); the version counter moves, so
// a backward that saved self before the change fails instead of using the new shape.
Tensor& become_view(Tensor& self, const Tensor& view, const char* op) {
  // Under kiln::compile's capture the out-of-place view was recorded but this change of self's
  // own geometry would not be: the function runs eagerly instead (DataDependentError).
  if (view.impl()->is_traced())
    throw DataDependentError(std::string(op) +
                             ": an in-place view op changes a tensor's own sizes, which a "
                             "capture does not record yet");
  TensorImpl& impl = *self.impl();
  AutogradMeta* m = impl.autograd_meta();
  const bool recording = GradMode::is_enabled() && m && m->requires_grad;
  if (recording) {
    KILN_CHECK(m->grad_fn != nullptr, op,
               ": a leaf Variable that requires grad is being used in an in-place operation.");
    KILN_CHECK(!m->is_view, op,
               ": in-place operations on a view of a tensor that requires grad are not "
               "supported; apply the operation to the base tensor or clone() the view first.");
  }
  impl.set_sizes_and_strides(view.sym_sizes().sym_vec(), view.sym_strides().sym_vec(),
                             view.sym_storage_offset());
  if (recording) {
    const AutogradMeta& vm = *view.impl()->autograd_meta();
    m->grad_fn = vm.grad_fn;
    m->output_nr = vm.output_nr;
  }
  impl.storage()->bump_version();
  return self;
}

}  // namespace

Tensor& Tensor::squeeze_() const {
  return become_view(const_cast<Tensor&>(*this), squeeze(), "squeeze_");
}
Tensor& Tensor::squeeze_(IntArrayRef dims) const {
  return become_view(const_cast<Tensor&>(*this), squeeze(dims), "squeeze_");
}
Tensor& Tensor::unsqueeze_(int64_t dim) const {
  return become_view(const_cast<Tensor&>(*this), unsqueeze(dim), "unsqueeze_");
}
Tensor& Tensor::t_() const { return become_view(const_cast<Tensor&>(*this), t(), "t_"); }
Tensor& Tensor::transpose_(int64_t dim0, int64_t dim1) const {
  return become_view(const_cast<Tensor&>(*this), transpose(dim0, dim1), "transpose_");
}
Tensor& Tensor::as_strided_(SymIntList size, SymIntList stride,
                            std::optional<SymInt> storage_offset) const {
  return become_view(const_cast<Tensor&>(*this),
                     as_strided(size, stride, std::move(storage_offset)), "as_strided_");
}

const Tensor& Tensor::resize_(IntArrayRef size, std::optional<MemoryFormat> memory_format) const {
  KILN_CHECK(!requires_grad(), "resize_: cannot resize variables that require grad");
  KILN_CHECK(!memory_format || *memory_format == MemoryFormat::Contiguous ||
                 *memory_format == MemoryFormat::Preserve,
             "resize_: memory_format ", *memory_format, " is not supported (only Contiguous)");
  TensorImpl& impl = *checked();
  if (impl.is_traced())
    throw DataDependentError(
        "resize_: resizing changes a tensor's own sizes, which a capture does not record yet");
  const std::vector<int64_t> sizes = size.vec();
  for (int64_t s : sizes) KILN_CHECK(s >= 0, "resize_: sizes must be non-negative, got ", size);
  impl.storage()->bump_version();
  if (impl.sizes() == size) return *this;  // same shape: strides and storage unchanged
  const std::vector<int64_t> strides = contiguous_strides(sizes);
  int64_t numel = 1;
  for (int64_t s : sizes) numel = checked_mul(numel, s);
  const int64_t needed =
      numel == 0 ? 0 : checked_mul(impl.storage_offset() + numel, int64_t(element_size()));
  impl.storage()->grow(static_cast<size_t>(needed));
  impl.set_sizes_and_strides(SymShape(sizes.begin(), sizes.end()),
                             SymShape(strides.begin(), strides.end()), impl.sym_storage_offset());
  return *this;
}

}  // namespace kiln
