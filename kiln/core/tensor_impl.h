#pragma once
// TensorImpl: what a Tensor handle points at. Storage, offset, sizes and strides (SymInts, with
// an int64 copy; see Note [Concrete sizes]), dtype, and optional autograd metadata. See tensor.h
// for the user-facing handle.
#include <memory>
#include <string>
#include <vector>

#include "kiln/core/array_ref.h"
#include "kiln/core/dtype.h"
#include "kiln/core/storage.h"

namespace kiln {

class Tensor;
namespace autograd {
class Node;
}
struct AutogradMeta;  // kiln/core/autograd_meta.h

// What a function transform (kiln::func) attaches to the tensors it wraps: a vmap's batched
// tensor is a meta TensorImpl with the logical sizes whose extension holds the physical tensor.
// Only the transform's dispatch mode reads it; a kernel given such a tensor is an error.
class TensorExtension {
 public:
  virtual ~TensorExtension() = default;
  // "a tensor batched by vmap (level 1)": for errors about a tensor that escaped its transform.
  virtual std::string describe() const = 0;
};

// How a tensor's elements are stored: strided (dense) memory, or sparse CSR components
// (kiln/core/sparse_csr.h). Ops take strided tensors unless they say otherwise.
enum class Layout : int8_t { Strided, SparseCsr };
inline constexpr Layout kStrided = Layout::Strided;
inline constexpr Layout kSparseCsr = Layout::SparseCsr;

class TensorImpl {
 public:
  TensorImpl(Storage storage, ScalarType dtype, SymShape sizes, SymShape strides,
             SymInt storage_offset = 0);
  ~TensorImpl();

  const Storage& storage() const { return storage_; }
  ScalarType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  const SymShape& sym_sizes() const { return sizes_; }
  const SymShape& sym_strides() const { return strides_; }
  const SymInt& sym_storage_offset() const { return storage_offset_; }
  SymInt sym_numel() const;
  // The geometry as int64; on a symbolic tensor these specialise it (Note [Concrete sizes]).
  IntArrayRef sizes() const { return IntArrayRef(concrete().data(), sizes_.size()); }
  IntArrayRef strides() const {
    return IntArrayRef(concrete().data() + sizes_.size(), sizes_.size());
  }
  int64_t storage_offset() const { return storage_offset_.guard_int(); }
  int64_t numel() const;
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  bool is_meta() const { return storage_->is_meta(); }
  Layout layout() const { return layout_; }
  bool is_symbolic() const;
  bool is_contiguous() const;
  // Start of the first element (storage data + offset * element size). Null for meta tensors.
  void* data() const;

  // Python numbers passed to ops become 0-dim tensors marked as "wrapped numbers": they take
  // part in type promotion only by category (int vs float), as in PyTorch.
  bool is_wrapped_number() const { return wrapped_number_; }
  void set_wrapped_number(bool w) { wrapped_number_ = w; }
  // A tracer's stand-in for a value it has not seen (a meta tensor with symbolic sizes): reading
  // its data throws DataDependentError.
  bool is_traced() const { return traced_; }
  void set_traced(bool t) { traced_ = t; }

  AutogradMeta* autograd_meta() const { return autograd_meta_.get(); }
  AutogradMeta& ensure_autograd_meta();
  void set_autograd_meta(std::unique_ptr<AutogradMeta> m);

  const std::shared_ptr<const TensorExtension>& extension() const { return extension_; }
  void set_extension(std::shared_ptr<const TensorExtension> e) { extension_ = std::move(e); }

  // For in-place metadata changes (resize, as_strided_, set_): keeps the handle's identity.
  void set_sizes_and_strides(SymShape sizes, SymShape strides, SymInt offset);
  void set_storage(Storage s) { storage_ = std::move(s); }
  // Takes other's storage, geometry and dtype; keeps this tensor's autograd identity.
  void shallow_copy_from(const TensorImpl& other);

 protected:
  void set_layout(Layout layout) { layout_ = layout; }

 private:
  Storage storage_;
  SymShape sizes_;
  SymShape strides_;
  SymInt storage_offset_;
  ScalarType dtype_;
  bool wrapped_number_ = false;
  bool traced_ = false;
  Layout layout_ = Layout::Strided;
  std::unique_ptr<AutogradMeta> autograd_meta_;
  std::shared_ptr<const TensorExtension> extension_;
  // sizes_ then strides_ as int64; empty until first use on a symbolic tensor.
  mutable std::vector<int64_t> concrete_;

  const std::vector<int64_t>& concrete() const {
    if (concrete_.size() != 2 * sizes_.size()) [[unlikely]]
      fill_concrete();
    return concrete_;
  }
  void fill_concrete() const;
  void refresh_concrete();
};

// Row-major strides for `sizes`.
SymShape contiguous_strides(const SymShape& sizes);
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes);
SymInt numel_of(const SymShape& sizes);

}  // namespace kiln
