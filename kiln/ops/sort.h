#pragma once
// Sorting and selection (libtorch's names and semantics): sort, argsort, topk, kthvalue, median,
// mode, cummax/cummin, unique, unique_consecutive, searchsorted, bucketize, histc, bincount.
// NaN sorts above every other value; ties resolve as PyTorch's CPU kernels resolve them (see
// Note [Ties as PyTorch's CPU kernels resolve them] in kiln/backend/cpu/sort_algorithms.h).
#include <optional>
#include <string>
#include <tuple>

#include "kiln/core/tensor.h"

namespace kiln {

// (values, indices). The CPU sort is always stable: equal elements keep their input order.
std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim = -1, bool descending = false);
std::tuple<Tensor, Tensor> sort(const Tensor& self, std::optional<bool> stable, int64_t dim = -1,
                                bool descending = false);
Tensor argsort(const Tensor& self, int64_t dim = -1, bool descending = false);
Tensor argsort(const Tensor& self, bool stable, int64_t dim = -1, bool descending = false);

std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim = -1,
                                bool largest = true, bool sorted = true);
// The k-th smallest (k from 1) along dim.
std::tuple<Tensor, Tensor> kthvalue(const Tensor& self, int64_t k, int64_t dim = -1,
                                    bool keepdim = false);
// The lower median of all elements (NaN if any is NaN).
Tensor median(const Tensor& self);
std::tuple<Tensor, Tensor> median(const Tensor& self, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> mode(const Tensor& self, int64_t dim = -1, bool keepdim = false);
// Running maximum / minimum with the index where it was (last) attained.
std::tuple<Tensor, Tensor> cummax(const Tensor& self, int64_t dim);
std::tuple<Tensor, Tensor> cummin(const Tensor& self, int64_t dim);

// Distinct elements of the flattened tensor in ascending order (the CPU result is sorted
// whatever `sorted` says, as PyTorch's), the index of each input element's value in them
// (shaped like self; empty unless return_inverse), and their counts (empty unless
// return_counts). PyTorch's torch._unique2.
std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& self, bool sorted = true,
                                          bool return_inverse = false, bool return_counts = false);
// Collapses runs of equal consecutive elements (of the flattened tensor, or of slices along dim).
std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& self,
                                                      bool return_inverse = false,
                                                      bool return_counts = false,
                                                      std::optional<int64_t> dim = std::nullopt);

// Indices where `values` would be inserted into the innermost dim of `sorted_sequence` to keep
// it sorted. side ("left"/"right") overrides `right` when given; `sorter` sorts an unsorted
// sequence (as argsort gives it).
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32 = false,
                    bool right = false, const std::optional<std::string>& side = std::nullopt,
                    const std::optional<Tensor>& sorter = std::nullopt);
Tensor searchsorted(const Tensor& sorted_sequence, const Scalar& value, bool out_int32 = false,
                    bool right = false, const std::optional<std::string>& side = std::nullopt,
                    const std::optional<Tensor>& sorter = std::nullopt);
Tensor bucketize(const Tensor& self, const Tensor& boundaries, bool out_int32 = false,
                 bool right = false);
Tensor bucketize(const Scalar& self, const Tensor& boundaries, bool out_int32 = false,
                 bool right = false);

// Histogram of `bins` equal bins over [min, max] (the data's range when min == max); elements
// outside are ignored.
Tensor histc(const Tensor& self, int64_t bins = 100, const Scalar& min = 0, const Scalar& max = 0);
// Occurrences of each value of a 1-D non-negative integer tensor (or the sums of its weights).
Tensor bincount(const Tensor& self, const std::optional<Tensor>& weights = std::nullopt,
                int64_t minlength = 0);

}  // namespace kiln
