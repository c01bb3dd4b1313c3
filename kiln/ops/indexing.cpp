#include "kiln/ops/indexing.h"

#include <string>

#include "kiln/core/error.h"
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
      return os << "Tensor" << i.tensor().sizes();
  }
  return os;
}

namespace {

void check_basic(ArrayRef<TensorIndex> indices) {
  for (const TensorIndex& i : indices) {
    KILN_CHECK(!i.is_tensor(), "index: advanced indexing (a Tensor of shape ", i.tensor().sizes(),
               " used as an index) is not supported yet; use integers, Slice, None, Ellipsis and "
               "booleans, or index_select/gather/masked_select");
  }
}

}  // namespace

Tensor apply_basic_index(const Tensor& self, ArrayRef<TensorIndex> indices) {
  check_basic(indices);
  int64_t specified = 0, ellipses = 0;
  for (const TensorIndex& i : indices) {
    if (i.is_integer() || i.is_slice()) ++specified;
    if (i.is_ellipsis()) ++ellipses;
  }
  KILN_CHECK(ellipses <= 1, "index: an index can only have a single ellipsis ('...')");
  KILN_CHECK(specified <= self.dim(), "index: too many indices for tensor of dimension ",
             self.dim());
  Tensor r = self;
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
        const SymInt size = r.size(dim);
        const SymInt& k = i.integer();
        KILN_CHECK(k >= -size && k < size, "index ", k, " is out of bounds for dimension ", dim,
                   " with size ", size);
        r = r.select(dim, k);
        break;
      }
      case TensorIndexType::Slice: {
        const Slice& s = i.slice();
        const SymInt step = s.step();
        KILN_CHECK(step != 0, "index: slice step cannot be zero");
        KILN_CHECK(step > 0, "index: step must be greater than zero (got ", step,
                   "); negative steps are not supported, use flip()");
        r = r.slice(dim++, s.start(), s.stop(), step);
        break;
      }
      case TensorIndexType::Tensor:
        break;  // rejected by check_basic
    }
  }
  return r;
}

}  // namespace kiln::indexing

namespace kiln {

Tensor Tensor::index(std::initializer_list<indexing::TensorIndex> indices) const {
  return indexing::apply_basic_index(
      *this, ArrayRef<indexing::TensorIndex>(indices.begin(), indices.size()));
}

Tensor Tensor::index(const std::vector<indexing::TensorIndex>& indices) const {
  return indexing::apply_basic_index(*this, indices);
}

Tensor Tensor::operator[](int64_t i) const { return index({indexing::TensorIndex(i)}); }

namespace {
Tensor index_target(Tensor& self, const std::vector<indexing::TensorIndex>& indices) {
  KILN_CHECK(!(GradMode::is_enabled() && self.requires_grad() && self.is_leaf()),
             "index_put_: a leaf Variable that requires grad is being used in an in-place "
             "operation.");
  return indexing::apply_basic_index(self, indices);
}
}  // namespace

Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& value) {
  Tensor target = index_target(*this, indices);
  // As PyTorch: leading size-1 dims of the value that the target lacks are dropped.
  Tensor v = value;
  while (v.dim() > target.dim() && v.size(0) == 1) v = v.select(0, 0);
  target.copy_(v);
  return *this;
}

Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices, const Scalar& value) {
  Tensor target = index_target(*this, indices);
  target.fill_(value);
  return *this;
}

}  // namespace kiln
