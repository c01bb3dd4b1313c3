#pragma once
// Subset and random_split, as torch.utils.data: random_split(dataset, {800, 200}, seed) splits
// a dataset into non-overlapping Subsets of the given lengths, drawn from a permutation that
// depends only on the seed. The subsets share the source dataset.
#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/core/error.h"
#include "kiln/data/dataset.h"

namespace kiln::data {
namespace datasets {

template <typename Source>
class Subset : public Dataset<Subset<Source>, typename Source::ExampleType> {
 public:
  using ExampleType = typename Source::ExampleType;

  Subset(std::shared_ptr<Source> source, std::vector<size_t> indices)
      : source_(std::move(source)), indices_(std::move(indices)) {}

  ExampleType get(size_t index) override {
    KILN_CHECK(index < indices_.size(), "Subset: index ", index,
               " is out of range for a subset of ", indices_.size(), " examples");
    return source_->get(indices_[index]);
  }
  std::optional<size_t> size() const override { return indices_.size(); }

  // Positions in the source dataset.
  const std::vector<size_t>& indices() const noexcept { return indices_; }

 private:
  std::shared_ptr<Source> source_;
  std::vector<size_t> indices_;
};

}  // namespace datasets

namespace detail {
// Index lists of the splits of a dataset of `size` examples (throws when lengths do not sum to it).
std::vector<std::vector<size_t>> random_split_indices(size_t size,
                                                      const std::vector<size_t>& lengths,
                                                      uint64_t seed);
}  // namespace detail

template <typename Source>
std::vector<datasets::Subset<Source>> random_split(Source dataset,
                                                   const std::vector<size_t>& lengths,
                                                   uint64_t seed) {
  auto size = dataset.size();
  KILN_CHECK(size.has_value(), "random_split: the dataset has no size");
  auto splits = detail::random_split_indices(*size, lengths, seed);
  auto source = std::make_shared<Source>(std::move(dataset));
  std::vector<datasets::Subset<Source>> subsets;
  for (auto& indices : splits) subsets.emplace_back(source, std::move(indices));
  return subsets;
}

}  // namespace kiln::data
