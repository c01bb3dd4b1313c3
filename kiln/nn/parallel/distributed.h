#pragma once
// nn::parallel::DistributedDataParallel, PyTorch's DDP: wraps a module so that each rank trains
// a replica on its part of the batch and backward leaves every rank with the gradient averaged
// over all of them. Construction checks that the ranks built the same model and broadcasts
// rank 0's parameters and buffers; each forward broadcasts rank 0's buffers (BatchNorm's running
// statistics); backward reduces gradients in buckets while it still runs (kiln/distributed/
// reducer.h). docs/distributed.md.
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kiln/core/arg.h"
#include "kiln/distributed/distributed.h"
#include "kiln/distributed/reducer.h"
#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"
#include "kiln/nn/parallel/forward_wrapper.h"

namespace kiln::nn::parallel {

struct DistributedDataParallelOptions {
  KILN_ARG(distributed::Group, process_group);  // null: the default group
  KILN_ARG(double, bucket_cap_mb) = 25;
  KILN_ARG(bool, broadcast_buffers) = true;
  KILN_ARG(bool, find_unused_parameters) = false;
  KILN_ARG(bool, gradient_as_bucket_view) = false;
  KILN_ARG(bool, static_graph) = false;
  KILN_ARG(bool, init_sync) = true;  // broadcast rank 0's parameters and buffers at construction
};

// What DistributedDataParallel<M> does for every M.
class DistributedDataParallelBase : public Module {
 public:
  // While alive, backward passes accumulate gradients locally without reducing them; the first
  // backward after it reduces the accumulated sum (gradient accumulation over micro-batches).
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(DistributedDataParallelBase& ddp);
    ~NoSyncGuard();
    NoSyncGuard(NoSyncGuard&& other) noexcept;
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(NoSyncGuard&&) = delete;

   private:
    DistributedDataParallelBase* ddp_;
    bool previous_;
  };
  [[nodiscard]] NoSyncGuard no_sync() { return NoSyncGuard(*this); }

  const distributed::Group& process_group() const { return group_; }
  distributed::Reducer& reducer() { return *reducer_; }

 protected:
  DistributedDataParallelBase(std::shared_ptr<Module> module,
                              const DistributedDataParallelOptions& options);
  void before_forward();
  void after_forward(const std::vector<Tensor>& outputs);

 private:
  std::shared_ptr<Module> wrapped_;
  distributed::Group group_;
  bool broadcast_buffers_;
  bool require_backward_grad_sync_ = true;
  std::shared_ptr<distributed::Reducer> reducer_;
};

// M: a module holder (a TORCH_MODULE-style type) or a std::shared_ptr to a module; forward()
// takes and returns what M's forward does.
template <class M>
class DistributedDataParallel : public ForwardWrapper<DistributedDataParallelBase, M> {
 public:
  explicit DistributedDataParallel(M module, const DistributedDataParallelOptions& options = {})
      : ForwardWrapper<DistributedDataParallelBase, M>(std::move(module), options) {}
};

}  // namespace kiln::nn::parallel
