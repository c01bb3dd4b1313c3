#include "kiln/nn/parallel/distributed.h"

#include <algorithm>

#include "kiln/core/error.h"
#include "kiln/core/grad_mode.h"
#include "kiln/distributed/comm.h"

namespace kiln::nn::parallel {

DistributedDataParallelBase::NoSyncGuard::NoSyncGuard(DistributedDataParallelBase& ddp)
    : ddp_(&ddp), previous_(ddp.require_backward_grad_sync_) {
  ddp.require_backward_grad_sync_ = false;
}

DistributedDataParallelBase::NoSyncGuard::NoSyncGuard(NoSyncGuard&& other) noexcept
    : ddp_(other.ddp_), previous_(other.previous_) {
  other.ddp_ = nullptr;
}

DistributedDataParallelBase::NoSyncGuard::~NoSyncGuard() {
  if (ddp_) ddp_->require_backward_grad_sync_ = previous_;
}

DistributedDataParallelBase::DistributedDataParallelBase(
    std::shared_ptr<Module> module, const DistributedDataParallelOptions& options)
    : wrapped_(std::move(module)), broadcast_buffers_(options.broadcast_buffers()) {
  KILN_CHECK(wrapped_ != nullptr, "DistributedDataParallel: the module is null");
  group_ = options.process_group() ? options.process_group() : distributed::default_group();
  register_module("module", wrapped_);

  std::vector<Tensor> params, state;
  std::vector<std::string> names, state_names;
  for (const auto& item : wrapped_->named_parameters()) {
    state.push_back(item.value());
    state_names.push_back(item.key());
    if (!item.value().requires_grad()) continue;
    KILN_CHECK(item.value().device().is_cpu(), "DistributedDataParallel: parameter '", item.key(),
               "' is on ", item.value().device(),
               "; the Gloo process group reduces CPU tensors only");
    params.push_back(item.value());
    names.push_back(item.key());
  }
  for (const auto& item : wrapped_->named_buffers()) {
    state.push_back(item.value());
    state_names.push_back(item.key());
  }
  KILN_CHECK(!params.empty(),
             "DistributedDataParallel: the module has no parameter that requires grad");
  distributed::verify_same_shapes_across_ranks(*group_, state, state_names,
                                               "DistributedDataParallel");
  if (options.init_sync()) distributed::broadcast_coalesced(*group_, state, 0);

  distributed::ReducerOptions r;
  KILN_CHECK(options.bucket_cap_mb() > 0,
             "DistributedDataParallel: bucket_cap_mb must be positive, got ",
             options.bucket_cap_mb());
  r.bucket_cap_bytes = static_cast<int64_t>(options.bucket_cap_mb() * 1024 * 1024);
  r.first_bucket_cap_bytes = std::min(r.first_bucket_cap_bytes, r.bucket_cap_bytes);
  r.find_unused_parameters = options.find_unused_parameters();
  r.static_graph = options.static_graph();
  r.gradient_as_bucket_view = options.gradient_as_bucket_view();
  reducer_ = distributed::Reducer::create(std::move(params), std::move(names), group_, r);
}

void DistributedDataParallelBase::before_forward() {
  if (!broadcast_buffers_ || group_->size() == 1) return;
  std::vector<Tensor> buffers = wrapped_->buffers();
  if (!buffers.empty()) distributed::broadcast_coalesced(*group_, buffers, 0);
}

void DistributedDataParallelBase::after_forward(const std::vector<Tensor>& outputs) {
  if (GradMode::is_enabled() && require_backward_grad_sync_)
    reducer_->prepare_for_backward(outputs);
}

}  // namespace kiln::nn::parallel
