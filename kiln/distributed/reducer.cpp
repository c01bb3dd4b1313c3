#include "kiln/distributed/reducer.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "kiln/autograd/engine.h"
#include "kiln/autograd/node.h"
#include "kiln/core/error.h"
#include "kiln/core/grad_mode.h"
#include "kiln/ops/ops.h"

namespace kiln::distributed {
namespace {

// The parameters whose accumulators the graph of `outputs` reaches.
std::unordered_set<const TensorImpl*> reachable_leaves(const std::vector<Tensor>& outputs) {
  std::unordered_set<const TensorImpl*> leaves;
  std::unordered_set<const autograd::Node*> seen;
  std::vector<const autograd::Node*> stack;
  for (const Tensor& t : outputs)
    if (t.defined() && t.grad_fn() && seen.insert(t.grad_fn().get()).second)
      stack.push_back(t.grad_fn().get());
  while (!stack.empty()) {
    const autograd::Node* n = stack.back();
    stack.pop_back();
    if (auto* acc = dynamic_cast<const autograd::AccumulateGrad*>(n))
      leaves.insert(acc->variable().impl());
    for (const autograd::Edge& e : n->next_functions())
      if (e.valid() && seen.insert(e.node.get()).second) stack.push_back(e.node.get());
  }
  return leaves;
}

std::string quoted_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

}  // namespace

std::shared_ptr<Reducer> Reducer::create(std::vector<Tensor> params, std::vector<std::string> names,
                                         std::shared_ptr<ProcessGroup> group,
                                         ReducerOptions options) {
  std::shared_ptr<Reducer> r(
      new Reducer(std::move(params), std::move(names), std::move(group), options));
  std::weak_ptr<Reducer> weak = r;
  for (size_t i = 0; i < r->params_.size(); ++i)
    r->params_[i].register_post_accumulate_grad_hook([weak, i](const Tensor&) {
      if (auto reducer = weak.lock()) reducer->on_gradient(i);
    });
  return r;
}

Reducer::Reducer(std::vector<Tensor> params, std::vector<std::string> names,
                 std::shared_ptr<ProcessGroup> group, ReducerOptions options)
    : params_(std::move(params)),
      names_(std::move(names)),
      group_(std::move(group)),
      options_(options) {
  KILN_CHECK(names_.size() == params_.size(), "Reducer: got ", names_.size(), " names for ",
             params_.size(), " parameters");
  KILN_CHECK(options_.bucket_cap_bytes > 0 && options_.first_bucket_cap_bytes > 0,
             "DistributedDataParallel: bucket_cap_mb must be positive, got ",
             options_.bucket_cap_bytes, " bytes");
  for (size_t i = 0; i < params_.size(); ++i)
    KILN_CHECK(params_[i].requires_grad() && params_[i].is_leaf(),
               "DistributedDataParallel: parameter '", names_[i],
               "' must be a leaf tensor that requires grad");
  const size_t n = params_.size();
  arrivals_.assign(n, 0);
  done_.assign(n, 0);
  used_.assign(n, 0);
  expected_.assign(n, 1);
  unused_.assign(n, 0);
  std::vector<size_t> reverse(n);
  for (size_t i = 0; i < n; ++i) reverse[i] = n - 1 - i;
  build_buckets(reverse);
}

// Fills buckets in `order`, one open bucket per dtype, closing it at the byte cap (the first
// bucket of each dtype has the smaller first cap).
void Reducer::build_buckets(const std::vector<size_t>& order) {
  buckets_.clear();
  bucket_of_.assign(params_.size(), 0);
  position_of_.assign(params_.size(), 0);
  std::map<ScalarType, std::pair<size_t, int64_t>> open;  // dtype -> (bucket, bytes so far)
  std::map<ScalarType, bool> had_first;
  for (size_t i : order) {
    const Tensor& p = params_[i];
    const ScalarType dtype = p.dtype();
    const int64_t bytes = p.numel() * static_cast<int64_t>(element_size(dtype));
    auto it = open.find(dtype);
    if (it == open.end()) {
      buckets_.emplace_back();
      it = open.emplace(dtype, std::make_pair(buckets_.size() - 1, int64_t{0})).first;
    }
    Bucket& b = buckets_[it->second.first];
    bucket_of_[i] = it->second.first;
    position_of_[i] = b.params.size();
    b.params.push_back(i);
    it->second.second += bytes;
    const int64_t cap =
        had_first[dtype] ? options_.bucket_cap_bytes : options_.first_bucket_cap_bytes;
    if (it->second.second >= cap) {
      open.erase(it);
      had_first[dtype] = true;
    }
  }
  for (Bucket& b : buckets_) {
    int64_t total = 0;
    for (size_t i : b.params) {
      b.offsets.push_back(total);
      total += params_[i].numel();
    }
    const Tensor& first = params_[b.params.front()];
    b.flat = zeros({total}, TensorOptions().dtype(first.dtype()).device(first.device()));
  }
}

std::vector<std::vector<size_t>> Reducer::bucket_indices() const {
  std::vector<std::vector<size_t>> out;
  for (const Bucket& b : buckets_) out.push_back(b.params);
  return out;
}

Tensor Reducer::slot(size_t index) const {
  const Bucket& b = buckets_[bucket_of_[index]];
  return b.flat.narrow(0, b.offsets[position_of_[index]], params_[index].numel())
      .view(params_[index].sizes());
}

void Reducer::reset_iteration() {
  for (Bucket& b : buckets_) {
    // A backward that failed half way may have left collectives running on the buffers.
    if (b.work) try {
        b.work->wait();
      } catch (const std::exception&) {
      }
    b.work.reset();
    b.pending = b.params.size();
  }
  next_bucket_ = 0;
  std::fill(arrivals_.begin(), arrivals_.end(), 0);
  std::fill(done_.begin(), done_.end(), 0);
  std::fill(used_.begin(), used_.end(), 0);
  armed_ = false;
  finalize_queued_ = false;
}

void Reducer::prepare_for_backward(const std::vector<Tensor>& outputs) {
  NoGradGuard no_grad;
  reset_iteration();
  armed_ = true;
  if (options_.static_graph && iteration_ > 0) {
    for (size_t i = 0; i < params_.size(); ++i)
      if (unused_[i]) mark_ready(i, false);
    return;
  }
  if (!options_.find_unused_parameters || learning() || outputs.empty()) return;
  const auto reachable = reachable_leaves(outputs);
  for (size_t i = 0; i < params_.size(); ++i)
    if (!reachable.count(params_[i].impl())) mark_ready(i, false);
}

void Reducer::on_gradient(size_t index) {
  if (!armed_) return;  // a backward that no DDP forward prepared, or inside no_sync()
  if (!finalize_queued_) {
    std::weak_ptr<Reducer> weak = weak_from_this();
    autograd::queue_callback([weak] {
      if (auto reducer = weak.lock()) reducer->finalize();
    });
    finalize_queued_ = true;
  }
  if (++arrivals_[index] == 1 && iteration_ == 0) arrival_order_.push_back(index);
  if (learning()) return;  // the first static_graph iteration reduces everything at the end
  KILN_CHECK(!done_[index] && arrivals_[index] <= expected_[index],
             "DistributedDataParallel: parameter '", names_[index],
             "' received its gradient more than once in one backward pass (or was marked unused "
             "and then used); a module that runs part of itself twice, as activation "
             "checkpointing does, needs static_graph(true)");
  if (arrivals_[index] < expected_[index]) return;
  NoGradGuard no_grad;
  mark_ready(index, true);
}

// Copies the parameter's gradient (zeros when unused) into its bucket and starts the buckets
// that are full, in order.
void Reducer::mark_ready(size_t index, bool used) {
  const Tensor& grad = params_[index].grad();
  Tensor s = slot(index);
  if (used && grad.defined())
    s.copy_(grad);
  else
    s.zero_();
  used_[index] = used;
  done_[index] = 1;
  --buckets_[bucket_of_[index]].pending;
  launch_ready_buckets();
}

void Reducer::launch_ready_buckets() {
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0) {
    Bucket& b = buckets_[next_bucket_++];
    b.work = group_->all_reduce(b.flat, ReduceOp::SUM);
  }
}

void Reducer::finalize() {
  if (!armed_) return;
  NoGradGuard no_grad;
  const bool tolerate_unused = options_.find_unused_parameters || options_.static_graph;
  if (learning()) {
    for (size_t i = 0; i < params_.size(); ++i) {
      expected_[i] = std::max(arrivals_[i], 1);
      if (arrivals_[i] > 0) mark_ready(i, true);
    }
  }
  std::vector<std::string> missing;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (done_[i]) continue;
    if (tolerate_unused)
      mark_ready(i, arrivals_[i] > 0);
    else
      missing.push_back(names_[i]);
  }
  if (!missing.empty()) {
    armed_ = false;
    KILN_FAIL("DistributedDataParallel: parameters ", quoted_names(missing),
              " received no gradient in this backward pass, so their buckets cannot be reduced. "
              "Every parameter must take part in computing the loss, unless the module is "
              "wrapped with find_unused_parameters(true) (or static_graph(true) when the same "
              "parameters go unused every iteration)");
  }

  // Which parameters some rank used: those no rank used keep their .grad.
  Tensor used_anywhere;
  std::shared_ptr<Work> used_work;
  const bool exchange_used = options_.find_unused_parameters || learning();
  if (exchange_used) {
    used_anywhere = zeros({static_cast<int64_t>(params_.size())}, kInt32);
    for (size_t i = 0; i < params_.size(); ++i) used_anywhere.data_ptr<int32_t>()[i] = used_[i];
    used_work = group_->all_reduce(used_anywhere, ReduceOp::MAX);
  }
  for (Bucket& b : buckets_) b.work->wait();
  if (used_work) used_work->wait();

  for (size_t i = 0; i < params_.size(); ++i) {
    bool anywhere = !unused_[i];
    if (exchange_used) anywhere = used_anywhere.data_ptr<int32_t>()[i] != 0;
    if (learning()) unused_[i] = !anywhere;
    if (!anywhere) continue;
    // The buckets hold sums: dividing makes the average in the pass that writes .grad.
    Tensor s = slot(i);
    const double scale = 1.0 / group_->size();
    params_[i].set_grad(options_.gradient_as_bucket_view ? s.mul_(scale) : s * scale);
  }
  armed_ = false;
  const bool rebuild = iteration_ == 0 && (!options_.find_unused_parameters || learning());
  ++iteration_;
  if (rebuild) rebuild_buckets_in_arrival_order();
}

// After the first iteration: buckets in the order gradients arrived on rank 0 (broadcast, so
// every rank builds the same buckets), the parameters that never arrived after them.
void Reducer::rebuild_buckets_in_arrival_order() {
  const int64_t n = static_cast<int64_t>(params_.size());
  Tensor order = full({n}, -1, kInt64);
  for (size_t k = 0; k < arrival_order_.size(); ++k)
    order.data_ptr<int64_t>()[k] = static_cast<int64_t>(arrival_order_[k]);
  group_->broadcast(order, 0)->wait();
  std::vector<size_t> rebuilt;
  std::vector<char> placed(params_.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = order.data_ptr<int64_t>()[k];
    if (i < 0 || i >= n || placed[i]) continue;
    placed[i] = 1;
    rebuilt.push_back(static_cast<size_t>(i));
  }
  for (size_t i = params_.size(); i-- > 0;)
    if (!placed[i]) rebuilt.push_back(i);
  build_buckets(rebuilt);
  arrival_order_.clear();
}

}  // namespace kiln::distributed
