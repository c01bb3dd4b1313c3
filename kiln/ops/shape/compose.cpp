// Shape functions composed of registry ops (PyTorch's CompositeImplicit idea): they have no
// entry of their own, so autograd, meta mode and tracing see the views they are made of.
// flatten, unflatten, t, mT, movedim, expand_as, broadcast_to, view_as, reshape_as, chunk,
// split, split_with_sizes, unbind.
#include <algorithm>

#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"

namespace kiln {

Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  if (self.dim() == 0) return self.reshape({1});
  const int64_t s = meta::wrap_dim("flatten", start_dim, self.dim());
  const int64_t e = meta::wrap_dim("flatten", end_dim, self.dim());
  KILN_CHECK(s <= e, "flatten: start_dim cannot come after end_dim (got start_dim=", start_dim,
             ", end_dim=", end_dim, ")");
  if (s == e) return self;
  SymShape sizes;
  for (int64_t d = 0; d < s; ++d) sizes.push_back(self.sym_size(d));
  SymInt merged = 1;
  for (int64_t d = s; d <= e; ++d) merged = merged * self.sym_size(d);
  sizes.push_back(merged);
  for (int64_t d = e + 1; d < self.dim(); ++d) sizes.push_back(self.sym_size(d));
  return self.reshape(std::move(sizes));
}

Tensor unflatten(const Tensor& self, int64_t dim, SymIntList sizes) {
  const int64_t d = meta::wrap_dim("unflatten", dim, self.dim());
  const SymShape& parts = sizes.get();
  KILN_CHECK(!parts.empty(), "unflatten: sizes must be non-empty");
  const bool has_inferred = std::any_of(parts.begin(), parts.end(), [](const SymInt& p) {
    return !p.is_symbolic() && p.guard_int() == -1;
  });
  if (!has_inferred) {
    SymInt product = 1;
    for (const SymInt& p : parts) product = product * p;
    KILN_CHECK(product == self.sym_size(d), "unflatten: Provided sizes ", SymIntArrayRef(parts),
               " don't multiply up to the size of dim ", dim, " (", self.sym_size(d),
               ") in the input tensor");
  }
  SymShape inferred = infer_size("unflatten", parts, self.sym_size(d));
  SymShape shape = self.sym_sizes();
  shape.erase(shape.begin() + d);
  shape.insert(shape.begin() + d, inferred.begin(), inferred.end());
  return self.view(std::move(shape));
}

Tensor t(const Tensor& self) { return self.t(); }

Tensor movedim(const Tensor& self, IntArrayRef source, IntArrayRef destination) {
  KILN_CHECK(source.size() == destination.size(),
             "movedim: Invalid source or destination dims: ", "source (", source,
             " dims) should contain the same number of dims as destination (", destination,
             " dims)");
  const int64_t nd = self.dim();
  std::vector<int64_t> src, dst;
  for (int64_t s : source) src.push_back(meta::wrap_dim("movedim", s, nd));
  for (int64_t s : destination) dst.push_back(meta::wrap_dim("movedim", s, nd));
  auto unique = [](std::vector<int64_t> v) {
    std::sort(v.begin(), v.end());
    return std::adjacent_find(v.begin(), v.end()) == v.end();
  };
  KILN_CHECK(unique(src), "movedim: repeated dim in `source` (", source, ")");
  KILN_CHECK(unique(dst), "movedim: repeated dim in `destination` (", destination, ")");
  // order[d] is the input dim that lands at output dim d: the moved ones at their destinations,
  // the others filling the free slots in their original order.
  std::vector<int64_t> order(nd, -1);
  std::vector<bool> moved(nd, false);
  for (size_t i = 0; i < src.size(); ++i) {
    order[dst[i]] = src[i];
    moved[src[i]] = true;
  }
  int64_t next = 0;
  for (int64_t d = 0; d < nd; ++d) {
    if (order[d] >= 0) continue;
    while (moved[next]) ++next;
    order[d] = next++;
  }
  return self.permute(order);
}
Tensor moveaxis(const Tensor& self, IntArrayRef source, IntArrayRef destination) {
  return movedim(self, source, destination);
}

Tensor broadcast_to(const Tensor& self, SymIntList size) { return expand(self, std::move(size)); }

std::vector<Tensor> split(const Tensor& self, SymInt split_size, int64_t dim) {
  KILN_CHECK(self.dim() > 0, "split: expects at least a 1-dimensional tensor");
  const int64_t d = meta::wrap_dim("split", dim, self.dim());
  const SymInt size = self.sym_size(d);
  KILN_CHECK(split_size >= 0,
             "split: expects split_size be non-negative, but got split_size=", split_size);
  KILN_CHECK(split_size != 0 || size == 0,
             "split: split_size can only be 0 if dimension size is 0, but got dimension size of ",
             size);
  int64_t count = 1;
  if (split_size != 0)
    count = std::max<int64_t>(((size + split_size - 1) / split_size).guard_int(), 1);
  std::vector<Tensor> out;
  out.reserve(count);
  for (int64_t i = 0; i < count; ++i) {
    SymInt start = split_size * i;
    SymInt length = i + 1 < count ? split_size : size - start;
    out.push_back(self.narrow(d, start, length));
  }
  return out;
}

std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim) {
  return split(self, SymInt(split_size), dim);
}

std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  KILN_CHECK(self.dim() > 0, "split_with_sizes: expects at least a 1-dimensional tensor");
  const int64_t d = meta::wrap_dim("split_with_sizes", dim, self.dim());
  const SymInt size = self.sym_size(d);
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    KILN_CHECK(s >= 0,
               "split_with_sizes: expects split_sizes have only non-negative entries, but "
               "got split_sizes=",
               split_sizes);
    total += s;
  }
  KILN_CHECK(size == total, "split_with_sizes: expects split_sizes to sum exactly to ", size,
             " (input tensor's size at dimension ", d, "), but got split_sizes=", split_sizes);
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    out.push_back(self.narrow(d, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> split(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  return split_with_sizes(self, split_sizes, dim);
}

std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  KILN_CHECK(self.dim() > 0, "chunk: expects at least a 1-dimensional tensor");
  KILN_CHECK(chunks > 0, "chunk: expects `chunks` to be greater than 0, got: ", chunks);
  const int64_t d = meta::wrap_dim("chunk", dim, self.dim());
  const SymInt size = self.sym_size(d);
  const SymInt split_size = (size + chunks - 1) / chunks;
  // A zero-size dim keeps the requested number of (empty) chunks, as PyTorch does.
  if (split_size == 0 && size == 0)
    return split_with_sizes(self, std::vector<int64_t>(chunks, 0), d);
  return split(self, split_size, d);
}

std::vector<Tensor> unbind(const Tensor& self, int64_t dim) {
  KILN_CHECK(self.dim() > 0, "unbind: Dimension specified as 0 but tensor has no dimensions");
  const int64_t d = meta::wrap_dim("unbind", dim, self.dim());
  const int64_t n = self.sym_size(d).guard_int();
  std::vector<Tensor> out;
  out.reserve(n);
  for (int64_t i = 0; i < n; ++i) out.push_back(self.select(d, i));
  return out;
}

// ---- Tensor methods ----
Tensor Tensor::view_as(const Tensor& other) const { return view(other.sym_sizes()); }
Tensor Tensor::reshape_as(const Tensor& other) const { return reshape(other.sym_sizes()); }
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  return kiln::flatten(*this, start_dim, end_dim);
}
Tensor Tensor::unflatten(int64_t dim, SymIntList sizes) const {
  return kiln::unflatten(*this, dim, std::move(sizes));
}
Tensor Tensor::mT() const {
  KILN_CHECK(dim() >= 2, "mT: is only supported on matrices or batches of matrices. Got ", dim(),
             "-D tensor.");
  return transpose(-2, -1);
}
Tensor Tensor::expand_as(const Tensor& other) const { return expand(other.sym_sizes()); }
Tensor Tensor::broadcast_to(SymIntList size) const {
  return kiln::broadcast_to(*this, std::move(size));
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  return kiln::chunk(*this, chunks, dim);
}
std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const {
  return kiln::split(*this, SymInt(split_size), dim);
}
std::vector<Tensor> Tensor::split(SymInt split_size, int64_t dim) const {
  return kiln::split(*this, std::move(split_size), dim);
}
std::vector<Tensor> Tensor::split(IntArrayRef split_sizes, int64_t dim) const {
  return kiln::split_with_sizes(*this, split_sizes, dim);
}
std::vector<Tensor> Tensor::split_with_sizes(IntArrayRef split_sizes, int64_t dim) const {
  return kiln::split_with_sizes(*this, split_sizes, dim);
}
std::vector<Tensor> Tensor::unbind(int64_t dim) const { return kiln::unbind(*this, dim); }
Tensor Tensor::movedim(IntArrayRef source, IntArrayRef destination) const {
  return kiln::movedim(*this, source, destination);
}

}  // namespace kiln
