#pragma once
// Dataset concepts, as torch::data::datasets: a BatchDataset answers a batch request (a list of
// indices) with a batch; a Dataset answers get(index) with one example and builds batches from
// it. dataset.map(transform) wraps a dataset in a MapDataset that transforms every batch.
//
// get_batch/get may be called from several DataLoader worker threads at once (the dataset is
// shared, as in libtorch's stateless data loader), so they must not mutate shared state.
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "kiln/core/array_ref.h"
#include "kiln/data/example.h"

namespace kiln::data::datasets {

template <typename SourceDataset, typename AppliedTransform>
class MapDataset;

template <typename Self, typename Batch = std::vector<Example<>>,
          typename BatchRequest = ArrayRef<size_t>>
class BatchDataset {
 public:
  using SelfType = Self;
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;

  virtual ~BatchDataset() = default;
  virtual Batch get_batch(BatchRequest request) = 0;
  // The number of examples (libtorch's datasets return an optional; all of Kiln's are sized).
  virtual std::optional<size_t> size() const = 0;

  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) & {
    return MapDataset<Self, TransformType>(static_cast<Self&>(*this), std::move(transform));
  }
  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) && {
    return MapDataset<Self, TransformType>(std::move(static_cast<Self&>(*this)),
                                           std::move(transform));
  }
};

template <typename Self, typename SingleExample = Example<>>
class Dataset : public BatchDataset<Self, std::vector<SingleExample>> {
 public:
  using ExampleType = SingleExample;

  virtual ExampleType get(size_t index) = 0;

  std::vector<ExampleType> get_batch(ArrayRef<size_t> indices) override {
    std::vector<ExampleType> batch;
    batch.reserve(indices.size());
    for (size_t i : indices) batch.push_back(get(i));
    return batch;
  }
};

// A dataset whose batches are the source's batches passed through transform.apply_batch.
template <typename SourceDataset, typename AppliedTransform>
class MapDataset : public BatchDataset<MapDataset<SourceDataset, AppliedTransform>,
                                       typename AppliedTransform::OutputBatchType,
                                       typename SourceDataset::BatchRequestType> {
 public:
  using DatasetType = SourceDataset;
  using TransformType = AppliedTransform;
  using BatchRequestType = typename SourceDataset::BatchRequestType;
  using OutputBatchType = typename AppliedTransform::OutputBatchType;

  MapDataset(DatasetType dataset, TransformType transform)
      : dataset_(std::move(dataset)), transform_(std::move(transform)) {}

  OutputBatchType get_batch(BatchRequestType indices) override {
    return transform_.apply_batch(dataset_.get_batch(std::move(indices)));
  }
  std::optional<size_t> size() const override { return dataset_.size(); }

  const SourceDataset& dataset() const { return dataset_; }
  const AppliedTransform& transform() const { return transform_; }

 private:
  SourceDataset dataset_;
  AppliedTransform transform_;
};

template <typename DatasetType, typename TransformType>
MapDataset<DatasetType, TransformType> map(DatasetType dataset, TransformType transform) {
  return MapDataset<DatasetType, TransformType>(std::move(dataset), std::move(transform));
}

}  // namespace kiln::data::datasets
