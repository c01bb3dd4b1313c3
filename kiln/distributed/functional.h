#pragma once
// Differentiable collectives (torch.distributed._functional_collectives): each returns a new
// tensor and leaves its input alone, and each is a registry op with a backward formula, so
// autograd (and kiln::compile, as an extern call) sees through it:
//   all_reduce(sum)      -> backward all_reduce(sum)     (avg: avg)
//   all_gather_tensor    -> backward reduce_scatter(sum)
//   reduce_scatter(sum)  -> backward all_gather          (avg: all_gather / size)
//   all_to_all_single    -> backward all_to_all_single with the splits swapped
// The backward of another reduction is a kiln::Error when it runs. docs/distributed.md.
#include <cstdint>
#include <vector>

#include "kiln/distributed/distributed.h"

namespace kiln::distributed::functional {

Tensor all_reduce(const Tensor& self, ReduceOp op = ReduceOp::SUM, const Group& group = nullptr);
// Every rank's self, concatenated along gather_dim in rank order.
Tensor all_gather_tensor(const Tensor& self, int64_t gather_dim = 0, const Group& group = nullptr);
// self reduced across ranks and split along scatter_dim; rank r gets piece r.
Tensor reduce_scatter_tensor(const Tensor& self, ReduceOp op = ReduceOp::SUM,
                             int64_t scatter_dim = 0, const Group& group = nullptr);
// Rows (dim 0) to and from every rank, as the in-place all_to_all_single.
Tensor all_to_all_single(const Tensor& self, std::vector<int64_t> output_split_sizes = {},
                         std::vector<int64_t> input_split_sizes = {}, const Group& group = nullptr);

}  // namespace kiln::distributed::functional
