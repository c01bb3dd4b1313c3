#pragma once
// The DataLoader, as torch::data: make_data_loader(dataset, options) (a RandomSampler shuffles
// unless another sampler type or object is given) returns a loader to iterate over with
// range-for, one batch (the dataset's BatchType) per step:
//
//   auto loader = kiln::data::make_data_loader<kiln::data::samplers::SequentialSampler>(
//       std::move(dataset), kiln::data::DataLoaderOptions().batch_size(64).workers(2));
//   for (auto& batch : *loader) { ... batch.data ... batch.target ... }
//
// Each begin() starts a new epoch. With workers > 0, worker threads load up to max_jobs
// batches ahead; batches still arrive in the sampler's order, so the result is the same as
// with workers = 0. An exception thrown while loading a batch is rethrown where the loop asks
// for that batch. Leaving the loop early is fine: the next begin() or the loader's destructor
// stops the workers.
#include <concepts>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "kiln/core/error.h"
#include "kiln/data/data_loader_options.h"
#include "kiln/data/pin_memory.h"
#include "kiln/data/prefetch_queue.h"
#include "kiln/data/samplers.h"

namespace kiln::data {

template <typename Dataset, typename Sampler>
class StatelessDataLoader {
 public:
  using BatchType = typename Dataset::BatchType;
  using BatchRequestType = typename Sampler::BatchRequestType;

  class Iterator {
   public:
    using value_type = BatchType;
    using reference = BatchType&;
    using difference_type = std::ptrdiff_t;

    Iterator() = default;
    Iterator(StatelessDataLoader* loader, std::optional<BatchType> batch)
        : loader_(loader), batch_(std::move(batch)) {}
    BatchType& operator*() { return *batch_; }
    BatchType* operator->() { return &*batch_; }
    Iterator& operator++() {
      batch_ = loader_->next();
      return *this;
    }
    // Iterators compare equal when both are exhausted (end() is the exhausted iterator).
    bool operator==(const Iterator& other) const {
      return !batch_.has_value() && !other.batch_.has_value();
    }
    bool operator!=(const Iterator& other) const { return !(*this == other); }

   private:
    StatelessDataLoader* loader_ = nullptr;
    std::optional<BatchType> batch_;
  };

  StatelessDataLoader(Dataset dataset, Sampler sampler, DataLoaderOptions options)
      : dataset_(std::move(dataset)), sampler_(std::move(sampler)), options_(std::move(options)) {
    KILN_CHECK(options_.batch_size() > 0, "DataLoader: batch_size must be positive");
  }
  StatelessDataLoader(const StatelessDataLoader&) = delete;
  StatelessDataLoader& operator=(const StatelessDataLoader&) = delete;
  ~StatelessDataLoader() { pool_.stop(); }

  // Starts a new epoch: resets the sampler and (re)starts the workers.
  Iterator begin() {
    pool_.stop();
    sampler_.reset(std::nullopt);
    sampler_done_ = false;
    if (options_.workers() > 0) {
      pool_.start(options_.workers(),
                  [this](BatchRequestType request) { return load(std::move(request)); });
    }
    return Iterator(this, next());
  }
  Iterator end() { return Iterator(); }

  // Stops the worker threads now (they are also stopped by the destructor and by begin()).
  void join() { pool_.stop(); }

  const DataLoaderOptions& options() const noexcept { return options_; }

 private:
  // The sampler's next request, honouring drop_last.
  std::optional<BatchRequestType> next_request() {
    if (sampler_done_) return std::nullopt;
    auto request = sampler_.next(options_.batch_size());
    if (!request || request->empty() ||
        (options_.drop_last() && request->size() < options_.batch_size())) {
      sampler_done_ = true;
      return std::nullopt;
    }
    return request;
  }

  BatchType load(BatchRequestType request) {
    BatchType batch = dataset_.get_batch(std::move(request));
    if (options_.pin_memory()) return pin_batch(std::move(batch));
    return batch;
  }

  void fill_queue() {
    while (pool_.in_flight() < options_.effective_max_jobs()) {
      auto request = next_request();
      if (!request) return;
      pool_.push(std::move(*request));
    }
  }

  std::optional<BatchType> next() {
    if (options_.workers() == 0) {
      auto request = next_request();
      if (!request) return std::nullopt;
      return load(std::move(*request));
    }
    fill_queue();
    if (pool_.in_flight() == 0) return std::nullopt;
    if (const auto& timeout = options_.timeout())
      KILN_CHECK(pool_.wait_for_next(*timeout), "DataLoader: no batch arrived from the ",
                 options_.workers(), " workers within ", timeout->count(),
                 " ms (DataLoaderOptions::timeout)");
    BatchType batch = pool_.take();
    fill_queue();
    return batch;
  }

  Dataset dataset_;
  Sampler sampler_;
  DataLoaderOptions options_;
  bool sampler_done_ = false;
  // Declared last: destroyed (workers joined) before the dataset they read.
  detail::PrefetchPool<BatchRequestType, BatchType> pool_;
};

template <typename Sampler>
concept SamplerLike = requires(Sampler s, size_t n) {
  s.reset(std::nullopt);
  { s.next(n) } -> std::same_as<std::optional<typename Sampler::BatchRequestType>>;
};

template <typename Dataset, typename Sampler>
requires SamplerLike<Sampler> std::unique_ptr<StatelessDataLoader<Dataset, Sampler>>
make_data_loader(Dataset dataset, Sampler sampler,
                 DataLoaderOptions options = DataLoaderOptions()) {
  return std::make_unique<StatelessDataLoader<Dataset, Sampler>>(
      std::move(dataset), std::move(sampler), std::move(options));
}

template <typename Sampler = samplers::RandomSampler, typename Dataset>
requires SamplerLike<Sampler> std::unique_ptr<StatelessDataLoader<Dataset, Sampler>>
make_data_loader(Dataset dataset, DataLoaderOptions options = DataLoaderOptions()) {
  auto size = dataset.size();
  KILN_CHECK(size.has_value(),
             "make_data_loader: the dataset has no size; pass a sampler explicitly");
  Sampler sampler(*size);
  return make_data_loader(std::move(dataset), std::move(sampler), std::move(options));
}

}  // namespace kiln::data
