#include "kiln/core/tensor_impl.h"

#include "kiln/core/autograd_meta.h"
#include "kiln/core/error.h"

namespace kiln {

TensorImpl::TensorImpl(Storage storage, ScalarType dtype, SymShape sizes, SymShape strides,
                       SymInt storage_offset)
    : storage_(std::move(storage)),
      sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      storage_offset_(std::move(storage_offset)),
      dtype_(dtype) {
  check_geometry(sizes_, strides_, storage_offset_, element_size(dtype_), *storage_);
  refresh_concrete();
}

TensorImpl::~TensorImpl() = default;

SymInt TensorImpl::sym_numel() const { return numel_of(sizes_); }

int64_t TensorImpl::numel() const {
  // An empty tensor's other sizes may multiply past int64 (numel_of stops at the zero).
  if (concrete_.size() != 2 * sizes_.size()) return sym_numel().guard_int();
  int64_t n = 1;
  for (int64_t s : sizes()) {
    if (s == 0) return 0;
    n *= s;  // check_geometry proved the product fits
  }
  return n;
}

// Note [Concrete sizes]
// sizes_, strides_ and storage_offset_ are SymInts: symbolic while the compiler traces, plain
// integers otherwise. Eager code, and libtorch programs, read them as int64 (sizes() returns an
// IntArrayRef, size(d) an int64_t), so a concrete tensor keeps an int64 copy, refreshed whenever
// its geometry is set. A symbolic tensor fills the copy on the first int64 read, which
// specialises every size and stride and records those guards, as converting a SymInt does; code
// that must stay symbolic reads sym_sizes()/sym_size(d) instead.
void TensorImpl::refresh_concrete() {
  concrete_.clear();
  if (!is_symbolic()) fill_concrete();
}

void TensorImpl::fill_concrete() const {
  std::vector<int64_t> c;
  c.reserve(2 * sizes_.size());
  for (const auto& s : sizes_) c.push_back(s.guard_int());
  for (const auto& s : strides_) c.push_back(s.guard_int());
  concrete_ = std::move(c);
}

bool TensorImpl::is_symbolic() const {
  if (storage_offset_.is_symbolic()) return true;
  for (const auto& s : sizes_)
    if (s.is_symbolic()) return true;
  for (const auto& s : strides_)
    if (s.is_symbolic()) return true;
  return false;
}

bool TensorImpl::is_contiguous() const {
  for (const auto& s : sizes_)  // an empty tensor is contiguous whatever its strides
    if (auto n = s.maybe_int(); n && *n == 0) return true;
  SymInt expected = 1;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    // The stride first: a dim whose stride is the contiguous one needs no guard on its size.
    if (!strides_[d].same_as(expected)) {
      if (sizes_[d] == 1) continue;
      if (strides_[d] != expected) return false;
    }
    expected = expected * sizes_[d];
  }
  return true;
}

void* TensorImpl::data() const {
  if (storage_->is_meta()) return nullptr;
  storage_->wait_for_pending_write();
  return static_cast<char*>(storage_->data()) +
         storage_offset_.guard_int() * static_cast<int64_t>(element_size(dtype_));
}

AutogradMeta& TensorImpl::ensure_autograd_meta() {
  if (!autograd_meta_) autograd_meta_ = std::make_unique<AutogradMeta>();
  return *autograd_meta_;
}

void TensorImpl::set_autograd_meta(std::unique_ptr<AutogradMeta> m) {
  autograd_meta_ = std::move(m);
}

void TensorImpl::set_sizes_and_strides(SymShape sizes, SymShape strides, SymInt offset) {
  check_geometry(sizes, strides, offset, element_size(dtype_), *storage_);
  sizes_ = std::move(sizes);
  strides_ = std::move(strides);
  storage_offset_ = std::move(offset);
  refresh_concrete();
}

void TensorImpl::shallow_copy_from(const TensorImpl& other) {
  storage_ = other.storage_;
  sizes_ = other.sizes_;
  strides_ = other.strides_;
  storage_offset_ = other.storage_offset_;
  dtype_ = other.dtype_;
  extension_ = other.extension_;
  concrete_ = other.concrete_;
}

SymShape contiguous_strides(const SymShape& sizes) {
  SymShape strides(sizes.size());
  SymInt acc = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = acc;
    acc = acc * sym_max(sizes[d], 1);
  }
  return strides;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t acc = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = acc;
    acc = checked_mul(acc, std::max<int64_t>(sizes[d], 1));
  }
  return strides;
}

SymInt numel_of(const SymShape& sizes) {
  SymInt n = 1;
  for (const auto& s : sizes) {
    if (s.maybe_int() == 0) return 0;  // an empty tensor's other sizes may multiply past int64
  }
  for (const auto& s : sizes) n = n * s;
  return n;
}

}  // namespace kiln
