// DistributedRandomSampler / DistributedSequentialSampler: each replica's share of the indices.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "kiln/core/error.h"
#include "kiln/data/samplers.h"

namespace kiln::data::samplers {
namespace {

std::vector<size_t> drain(Sampler<>& sampler, size_t batch_size) {
  std::vector<size_t> all;
  while (auto batch = sampler.next(batch_size)) {
    EXPECT_LE(batch->size(), batch_size);
    all.insert(all.end(), batch->begin(), batch->end());
  }
  return all;
}

TEST(DistributedSampler, SequentialSharesAreContiguousAndWrapWithDuplicates) {
  // 10 examples over 3 replicas: ceil = 4 each, the last replica wraps to the start.
  std::vector<std::vector<size_t>> expected = {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 0, 1}};
  for (size_t rank = 0; rank < 3; ++rank) {
    DistributedSequentialSampler sampler(10, 3, rank);
    EXPECT_EQ(drain(sampler, 3), expected[rank]) << "rank " << rank;
  }
}

TEST(DistributedSampler, WithoutDuplicatesTheRemainderIsDropped) {
  std::vector<std::vector<size_t>> expected = {{0, 1, 2}, {3, 4, 5}, {6, 7, 8}};
  for (size_t rank = 0; rank < 3; ++rank) {
    DistributedSequentialSampler sampler(10, 3, rank, /*allow_duplicates=*/false);
    EXPECT_EQ(drain(sampler, 2), expected[rank]);
  }
}

TEST(DistributedSampler, RandomSharesPartitionOnePermutationPerEpoch) {
  std::vector<size_t> epoch0, epoch1;
  for (size_t rank = 0; rank < 4; ++rank) {
    DistributedRandomSampler sampler(12, 4, rank);
    std::vector<size_t> share = drain(sampler, 5);
    EXPECT_EQ(share.size(), 3u);
    epoch0.insert(epoch0.end(), share.begin(), share.end());
    sampler.set_epoch(1);
    EXPECT_EQ(sampler.epoch(), 1u);
    sampler.reset();
    share = drain(sampler, 5);
    epoch1.insert(epoch1.end(), share.begin(), share.end());
  }
  std::vector<size_t> all(12);
  for (size_t i = 0; i < 12; ++i) all[i] = i;
  EXPECT_NE(epoch0, all);  // shuffled
  EXPECT_NE(epoch0, epoch1);
  std::sort(epoch0.begin(), epoch0.end());
  std::sort(epoch1.begin(), epoch1.end());
  EXPECT_EQ(epoch0, all);
  EXPECT_EQ(epoch1, all);
}

TEST(DistributedSampler, ResetTakesANewSizeAndRestarts) {
  DistributedSequentialSampler sampler(4, 2, 1);
  EXPECT_EQ(drain(sampler, 8), (std::vector<size_t>{2, 3}));
  EXPECT_FALSE(sampler.next(1).has_value());
  sampler.reset(6);
  EXPECT_EQ(drain(sampler, 8), (std::vector<size_t>{3, 4, 5}));
  DistributedRandomSampler empty(0, 2, 0);
  EXPECT_FALSE(empty.next(1).has_value());
}

TEST(DistributedSampler, RejectsABadRank) {
  EXPECT_THROW(DistributedRandomSampler(10, 2, 2), Error);
  EXPECT_THROW(DistributedSequentialSampler(10, 0, 0), Error);
}

}  // namespace
}  // namespace kiln::data::samplers
