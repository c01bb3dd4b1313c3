#pragma once
// Fully sharded data parallelism (PyTorch's FSDP): every parameter is split across the ranks, so
// each rank stores, and its optimizer updates, 1 / N of the model. A unit (a module wrapped by
// fully_shard) all-gathers its parameters before its forward, frees them after it (and gathers
// them again when backward reaches it), and reduce-scatters their gradients, averaged over the
// ranks, when backward is done: each rank gets the gradient of its own piece.
//
// Units nest: wrap the blocks first (the model holds the wrappers as its submodules), then the
// model; a unit manages the parameters that no inner unit does. Parameters are sharded flat, as
// FSDP1's flat parameters: rank r holds elements [r c, (r + 1) c) of each parameter flattened,
// c = ceil(numel / N) (the last ranks hold fewer, or none).
//
// C++ modules have no forward hooks, so a unit is a wrapper, as DistributedDataParallel is:
// fully_shard(module) returns a FullyShardedDataParallel<M> whose forward is the module's.
// Every unit must take part in every backward on every rank (its gradients are reduced then).
// docs/distributed.md.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/core/arg.h"
#include "kiln/distributed/device_mesh.h"
#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"
#include "kiln/nn/parallel/forward_wrapper.h"

namespace kiln::nn::parallel {

struct FullyShardOptions {
  KILN_ARG(std::shared_ptr<distributed::DeviceMesh>, mesh);  // 1-D; null: every rank
  // Free the gathered parameters after forward and gather them again for backward (less
  // memory, one more all-gather); false keeps them until backward is done.
  KILN_ARG(bool, reshard_after_forward) = true;
};

// What FullyShardedDataParallel<M> does for every M.
class FullyShardedBase : public Module {
 public:
  ~FullyShardedBase() override;

  // Every parameter of the wrapped module, whole, by name ("fc1.weight"), and its buffers:
  // every rank calls it (it all-gathers).
  std::map<std::string, Tensor> full_state_dict();
  // A checkpoint of one safetensors file per rank (rank<R>.safetensors, this rank's pieces)
  // and index.json in `directory`; every rank calls it. load_sharded reads one written at any
  // world size into this (identically built) model.
  void save_sharded(const std::string& directory);
  void load_sharded(const std::string& directory);

  // Parameters this unit manages (not those of inner units), by name.
  const std::vector<std::string>& managed_names() const;
  bool is_sharded() const;  // false between the gathering before forward and the resharding

  struct State;

 protected:
  std::vector<std::pair<std::string, FullyShardedBase*>> all_units();
  FullyShardedBase(std::shared_ptr<Module> module, const FullyShardOptions& options);
  void before_forward();
  void after_forward(const std::vector<Tensor>& outputs);

 private:
  std::shared_ptr<Module> wrapped_;
  std::shared_ptr<State> state_;  // shared with the autograd hooks
};

template <class M>
class FullyShardedDataParallel : public ForwardWrapper<FullyShardedBase, M> {
 public:
  explicit FullyShardedDataParallel(M module, const FullyShardOptions& options = {})
      : ForwardWrapper<FullyShardedBase, M>(std::move(module), options) {}
};

// torch's fully_shard, as a wrapper (see above).
template <class M>
std::shared_ptr<FullyShardedDataParallel<M>> fully_shard(M module,
                                                         const FullyShardOptions& options = {}) {
  return std::make_shared<FullyShardedDataParallel<M>>(std::move(module), options);
}

}  // namespace kiln::nn::parallel
