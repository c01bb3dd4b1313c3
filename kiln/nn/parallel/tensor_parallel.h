#pragma once
// Tensor-parallel Linear layers (Megatron-LM's, which torch's ColwiseParallel and RowwiseParallel
// plans produce): the weight split across the ranks of a 1-D mesh, each rank multiplying by its
// piece. A ColumnParallelLinear followed by a RowParallelLinear is a tensor-parallel MLP with
// one all-reduce forward and one backward:
//
//   ColumnParallelLinear: weight [out, in] split by rows (Shard(0)); the replicated input's
//     gradient is all-reduced in backward; the output is this rank's columns of the result
//     (Shard(-1)), or all of them with gather_output.
//   RowParallelLinear: weight split by columns (Shard(1)); the input is this rank's columns
//     (input_is_parallel, what ColumnParallelLinear gives) or is split here; the partial
//     products are all-reduced forward, and the bias, replicated, is added after.
//
// Every rank ends with rank 0's initial values (the full weight is built, then distributed).
// docs/distributed.md.
#include <memory>

#include "kiln/distributed/device_mesh.h"
#include "kiln/distributed/dtensor.h"
#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"

namespace kiln::nn::parallel {

struct ColumnParallelLinearImpl : Module {
  ColumnParallelLinearImpl(int64_t in_features, int64_t out_features,
                           std::shared_ptr<distributed::DeviceMesh> mesh, bool bias = true,
                           bool gather_output = false);
  // input [*, in] (the same on every rank) -> [*, out / ranks] (or [*, out] with gather_output).
  Tensor forward(const Tensor& input);
  // Takes this rank's piece of a full weight [out, in] and bias [out].
  void load_full(const Tensor& weight, const Tensor& bias = {});

  Tensor weight, bias;  // this rank's rows
  std::shared_ptr<distributed::DeviceMesh> mesh;
  int64_t in_features, out_features;
  bool gather_output;
};
KILN_MODULE(ColumnParallelLinear);

struct RowParallelLinearImpl : Module {
  RowParallelLinearImpl(int64_t in_features, int64_t out_features,
                        std::shared_ptr<distributed::DeviceMesh> mesh, bool bias = true,
                        bool input_is_parallel = true);
  // input [*, in / ranks] (this rank's columns; [*, in] unless input_is_parallel) -> [*, out],
  // the same on every rank.
  Tensor forward(const Tensor& input);
  void load_full(const Tensor& weight, const Tensor& bias = {});

  Tensor weight, bias;  // this rank's columns of the weight; the whole bias
  std::shared_ptr<distributed::DeviceMesh> mesh;
  int64_t in_features, out_features;
  bool input_is_parallel;
};
KILN_MODULE(RowParallelLinear);

}  // namespace kiln::nn::parallel
