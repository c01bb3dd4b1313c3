#pragma once
// DistributedDataParallel's gradient reducer (c10d's Reducer). Parameters are grouped into
// buckets of about bucket_cap bytes, one dtype each, in reverse registration order (roughly the
// order backward produces their gradients) and, after the first iteration, in the order the
// gradients actually arrived on rank 0. A post-accumulate-grad hook copies each gradient into
// its bucket's flat buffer; a full bucket is averaged across the ranks on the group's worker
// thread while backward goes on. Buckets start in index order on every rank, so all ranks run
// the same collectives in the same order. When backward ends, the reducer waits for the buckets
// and writes the averages into the parameters' .grad.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/distributed/process_group.h"

namespace kiln::distributed {

struct ReducerOptions {
  int64_t bucket_cap_bytes = int64_t{25} << 20;
  int64_t first_bucket_cap_bytes = int64_t{1} << 20;  // small, so the first bucket starts early
  // Parameters that get no gradient in a backward are reduced as zeros; one that no rank used
  // keeps its .grad as it was.
  bool find_unused_parameters = false;
  // The set of used parameters, and how often each gradient arrives (activation checkpointing
  // runs a block twice), is the same every iteration: learnt in the first one.
  bool static_graph = false;
  // .grad becomes a view into the bucket rather than a copy of it.
  bool gradient_as_bucket_view = false;
};

class Reducer : public std::enable_shared_from_this<Reducer> {
 public:
  // Registers a hook on every parameter; `names` label them in errors.
  static std::shared_ptr<Reducer> create(std::vector<Tensor> params, std::vector<std::string> names,
                                         std::shared_ptr<ProcessGroup> group,
                                         ReducerOptions options);

  // Arms the reducer for the next backward; `outputs` are the forward's results, searched for
  // the parameters that cannot get a gradient (find_unused_parameters).
  void prepare_for_backward(const std::vector<Tensor>& outputs);

  // The parameter indices of each bucket, in launch order.
  std::vector<std::vector<size_t>> bucket_indices() const;
  // Backward passes reduced so far.
  int64_t iteration() const { return iteration_; }

  struct Bucket {
    std::vector<size_t> params;
    std::vector<int64_t> offsets;  // of each parameter in `flat`, in elements
    Tensor flat;
    size_t pending = 0;  // parameters not yet copied in this iteration
    std::shared_ptr<Work> work;
  };

 private:
  Reducer(std::vector<Tensor> params, std::vector<std::string> names,
          std::shared_ptr<ProcessGroup> group, ReducerOptions options);
  void build_buckets(const std::vector<size_t>& order);
  void rebuild_buckets_in_arrival_order();
  void reset_iteration();
  void on_gradient(size_t index);
  void mark_ready(size_t index, bool used);
  void launch_ready_buckets();
  void finalize();
  Tensor slot(size_t index) const;
  bool learning() const { return options_.static_graph && iteration_ == 0; }

  std::vector<Tensor> params_;
  std::vector<std::string> names_;
  std::shared_ptr<ProcessGroup> group_;
  ReducerOptions options_;

  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_, position_of_;  // each parameter's bucket and place in it
  size_t next_bucket_ = 0;                       // the first bucket not yet started

  bool armed_ = false, finalize_queued_ = false;
  std::vector<int> arrivals_;  // gradients received per parameter this iteration
  std::vector<char> done_;     // copied into its bucket this iteration
  std::vector<char> used_;     // got a gradient on this rank this iteration
  std::vector<int> expected_;  // arrivals that make a parameter ready (static_graph learns it)
  std::vector<char> unused_;   // static_graph: not used by any rank in the first iteration
  std::vector<size_t> arrival_order_;  // first iteration
  int64_t iteration_ = 0;
};

}  // namespace kiln::distributed
