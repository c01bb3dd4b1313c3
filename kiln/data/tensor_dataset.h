#pragma once
// Datasets over tensors already in memory: TensorDataset (libtorch's: examples are the rows of
// one tensor) and TensorPairDataset (rows of a data tensor with the matching rows of a target
// tensor, like Python's TensorDataset(x, y)).
#include "kiln/core/error.h"
#include "kiln/data/dataset.h"

namespace kiln::data::datasets {

class TensorDataset : public Dataset<TensorDataset, TensorExample> {
 public:
  explicit TensorDataset(Tensor tensor) : tensor(std::move(tensor)) {
    KILN_CHECK(this->tensor.defined() && this->tensor.dim() >= 1,
               "TensorDataset: expected a tensor with at least one dimension");
  }
  TensorExample get(size_t index) override { return tensor[static_cast<int64_t>(index)]; }
  std::optional<size_t> size() const override { return static_cast<size_t>(tensor.size(0)); }

  Tensor tensor;
};

class TensorPairDataset : public Dataset<TensorPairDataset> {
 public:
  TensorPairDataset(Tensor data, Tensor targets)
      : data_(std::move(data)), targets_(std::move(targets)) {
    KILN_CHECK(data_.defined() && targets_.defined() && data_.dim() >= 1 && targets_.dim() >= 1,
               "TensorPairDataset: expected data and targets with at least one dimension");
    KILN_CHECK(data_.size(0) == targets_.size(0), "TensorPairDataset: data has ", data_.size(0),
               " rows but targets have ", targets_.size(0));
  }
  Example<> get(size_t index) override {
    auto i = static_cast<int64_t>(index);
    return {data_[i], targets_[i]};
  }
  std::optional<size_t> size() const override { return static_cast<size_t>(data_.size(0)); }
  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor data_, targets_;
};

}  // namespace kiln::data::datasets
