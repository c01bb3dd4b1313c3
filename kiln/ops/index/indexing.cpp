#include "kiln/ops/indexing.h"

#include <string>

#include "kiln/core/error.h"
#include "kiln/ops/index.h"
#include "kiln/ops/ops.h"

namespace kiln::indexing {

TensorIndex::TensorIndex(const char* str) : type_(TensorIndexType::Ellipsis) {
  KILN_CHECK(str != nullptr && std::string(str) == "...",
             "TensorIndex: expected \"...\" to represent an ellipsis index, but got \"",
             str ? str : "(null)", "\"");
}

std::ostream& operator<<(std::ostream& os, const TensorIndex& i) {
  switch (i.type()) {
    case TensorIndexType::None:
      return os << "None";
    case TensorIndexType::Ellipsis:
      return os << "...";
    case TensorIndexType::Integer:
      return os << i.integer();
    case TensorIndexType::Boolean:
      return os << (i.boolean() ? "True" : "False");
    case TensorIndexType::Slice: {
      const Slice& s = i.slice();
      if (s.start()) os << *s.start();
      os << ":";
      if (s.stop()) os << *s.stop();
      return os << ":" << s.step();
    }
    case TensorIndexType::Tensor:
      return os << "Tensor" << i.tensor().sym_sizes();
  }
  return os;
}

namespace {

// Index tensors of a bool mask: one int64 tensor per dim the mask covers (its nonzero coords).
void add_mask(const char* op, const Tensor& r, int64_t dim, const Tensor& mask,
              std::vector<Tensor>& out) {
  for (int64_t d = 0; d < mask.dim(); ++d) {
    KILN_CHECK(dim + d < r.dim() && mask.sym_size(d) == r.sym_size(dim + d), op,
               ": The shape of the mask ", mask.sym_sizes(), " at index ", d,
               " does not match the shape of the indexed tensor ", r.sym_sizes(), " at index ",
               dim + d);
  }
  std::vector<Tensor> coords = mask.to(kBool).nonzero_numpy();
  for (Tensor& c : coords) out.push_back(std::move(c));
}

// Dims an index consumes (a mask: its dims; None and Ellipsis none; booleans none).
int64_t consumed_dims(const TensorIndex& i) {
  if (i.is_integer() || i.is_slice()) return 1;
  if (!i.is_tensor()) return 0;
  const Tensor& t = i.tensor();
  if (t.dtype() == kBool || t.dtype() == kUInt8) return t.dim();
  return 1;
}

}  // namespace

SplitIndex split_index(const Tensor& self, ArrayRef<TensorIndex> indices, const char* op) {
  int64_t specified = 0, ellipses = 0;
  for (const TensorIndex& i : indices) {
    specified += consumed_dims(i);
    if (i.is_ellipsis()) ++ellipses;
  }
  KILN_CHECK(ellipses <= 1, op, ": an index can only have a single ellipsis ('...'), got ",
             ellipses);
  KILN_CHECK(specified <= self.dim(), op, ": too many indices for tensor of dimension ", self.dim(),
             " (got ", specified, ")");
  Tensor r = self;
  std::vector<Tensor> tensors;  // per dim of r, undefined where no tensor applies
  bool any_tensor = false;
  int64_t dim = 0;  // the dim of `r` the next index applies to
  for (const TensorIndex& i : indices) {
    switch (i.type()) {
      case TensorIndexType::None:
        r = r.unsqueeze(dim++);
        break;
      case TensorIndexType::Ellipsis:
        dim += self.dim() - specified;
        break;
      case TensorIndexType::Boolean:
        // x[True] adds a dim of size 1, x[False] one of size 0.
        r = r.unsqueeze(dim);
        if (!i.boolean()) r = r.slice(dim, 0, 0);
        ++dim;
        break;
      case TensorIndexType::Integer: {
        const SymInt size = r.sym_size(dim);
        const SymInt& k = i.integer();
        KILN_CHECK(k >= -size && k < size, op, ": index ", k, " is out of bounds for dimension ",
                   dim, " with size ", size);
        r = r.select(dim, k);
        break;
      }
      case TensorIndexType::Slice: {
        const Slice& s = i.slice();
        const SymInt step = s.step();
        KILN_CHECK(step != 0, op, ": slice step cannot be zero");
        KILN_CHECK(step > 0, op, ": step must be greater than zero (got ", step,
                   "); negative steps are not supported, use flip()");
        r = r.slice(dim++, s.start(), s.stop(), step);
        break;
      }
      case TensorIndexType::Tensor: {
        const Tensor& t = i.tensor();
        any_tensor = true;
        tensors.resize(static_cast<size_t>(dim));
        if (t.dtype() == kBool || t.dtype() == kUInt8) {
          if (t.dim() == 0) {  // a 0-dim mask acts as x[True] / x[False]
            r = r.unsqueeze(dim);
            if (!t.item<bool>()) r = r.slice(dim, 0, 0);
            ++dim;
            break;
          }
          add_mask(op, r, dim, t, tensors);
          dim += t.dim();
        } else {
          KILN_CHECK(t.dtype() == kInt64 || t.dtype() == kInt32, op,
                     ": tensors used as indices must be long, int, byte or bool tensors, "
                     "got ",
                     t.dtype());
          tensors.push_back(t);
          ++dim;
        }
        break;
      }
    }
  }
  if (!any_tensor) tensors.clear();
  return {r, tensors};
}

Tensor apply_basic_index(const Tensor& self, ArrayRef<TensorIndex> indices) {
  for (const TensorIndex& i : indices)
    KILN_CHECK(!i.is_tensor(), "apply_basic_index: a Tensor index (shape ", i.tensor().sym_sizes(),
               ") needs advanced indexing; use Tensor::index");
  return split_index(self, indices).view;
}

}  // namespace kiln::indexing

namespace kiln {

Tensor Tensor::index(std::initializer_list<indexing::TensorIndex> indices) const {
  return kiln::index(*this, std::vector<indexing::TensorIndex>(indices));
}

Tensor Tensor::index(const std::vector<indexing::TensorIndex>& indices) const {
  return kiln::index(*this, indices);
}

Tensor Tensor::operator[](int64_t i) const { return index({indexing::TensorIndex(i)}); }
Tensor Tensor::operator[](const Scalar& i) const {
  KILN_CHECK(i.is_integral(), "index: operator[] expected an integer index, got ", i);
  return (*this)[i.to<int64_t>()];
}
Tensor Tensor::operator[](const Tensor& i) const { return index({indexing::TensorIndex(i)}); }

Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices,
                           const Tensor& value) const {
  return kiln::index_put_(const_cast<Tensor&>(*this), indices, value, false);
}

Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices,
                           const Scalar& value) const {
  return kiln::index_put_(const_cast<Tensor&>(*this), indices,
                          scalar_tensor(value, TensorOptions(dtype())), false);
}

}  // namespace kiln
