#pragma once
// Gather, scatter and index ops (PyTorch's semantics and spellings):
//   gather / scatter (tensor src or scalar value, optional reduce "add"/"multiply") /
//   scatter_add / scatter_reduce(dim, index, src, "sum"|"prod"|"mean"|"amax"|"amin",
//   include_self) along a dim with an index of the same rank;
//   index_select / index_add / index_copy / index_fill with a 1-D index along a dim;
//   masked_select / masked_scatter, take / take_along_dim / put, nonzero, where(cond), one_hot.
// Indices are int64 (int32 accepted); an out-of-range index raises a kiln::Error naming the op,
// the value and the valid range, and nothing is written. gather/scatter/index_select/index_add/
// index_copy reject negative indices; index_fill, take, put and advanced indexing (indexing.h)
// count them from the end.
#include <optional>
#include <string>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/ops/indexing.h"

namespace kiln {

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad = false);
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
               const std::string& reduce);
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
               const std::string& reduce);
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self = true);

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index);
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha = 1);
Tensor index_copy(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source);
Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);
Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value);

Tensor masked_select(const Tensor& self, const Tensor& mask);
Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source);
// Elements of self (read as 1-D) at `index`; the result has index's shape.
Tensor take(const Tensor& self, const Tensor& index);
// Without dim: take along the flattened tensor; with dim: gather with broadcast indices.
Tensor take_along_dim(const Tensor& self, const Tensor& indices,
                      std::optional<int64_t> dim = std::nullopt);
// self (read as 1-D) with source written (or added, accumulate) at index.
Tensor put(const Tensor& self, const Tensor& index, const Tensor& source, bool accumulate = false);

// [n, self.dim()] int64 coordinates of the nonzero elements, in row-major order.
Tensor nonzero(const Tensor& self);
// as_tuple = true: one 1-D tensor per dim (nonzero_numpy); false: {nonzero(self)}.
std::vector<Tensor> nonzero(const Tensor& self, bool as_tuple);
std::vector<Tensor> nonzero_numpy(const Tensor& self);
// where(condition) with one argument: nonzero(condition, as_tuple=true).
std::vector<Tensor> where(const Tensor& condition);
// int64 one-hot encoding along a new last dim; num_classes = -1: max(self) + 1.
Tensor one_hot(const Tensor& self, int64_t num_classes = -1);

// Advanced indexing as free functions (x.index(...) / x.index_put_(...) are the methods):
// accumulate = true adds values at repeated indices instead of writing one of them.
Tensor index(const Tensor& self, const std::vector<indexing::TensorIndex>& indices);
Tensor index_put(const Tensor& self, const std::vector<indexing::TensorIndex>& indices,
                 const Tensor& values, bool accumulate = false);
Tensor& index_put_(Tensor& self, const std::vector<indexing::TensorIndex>& indices,
                   const Tensor& values, bool accumulate = false);

}  // namespace kiln
