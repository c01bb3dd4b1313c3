// DataLoader, samplers, transforms, TensorDataset and random_split.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "kiln/core/error.h"
#include "kiln/data/data.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/range.h"

namespace kiln {
namespace {

using data::DataLoaderOptions;
using data::Example;
using data::make_data_loader;
using data::samplers::RandomSampler;
using data::samplers::SequentialSampler;
using data::transforms::Stack;

// Example i has data [i, 10 i] and target i; get(throw_at) throws.
struct Numbers : data::datasets::Dataset<Numbers> {
  explicit Numbers(size_t n, int64_t throw_at = -1) : n(n), throw_at(throw_at) {}
  Example<> get(size_t index) override {
    auto i = static_cast<int64_t>(index);
    KILN_CHECK(i != throw_at, "Numbers: cannot load example ", i);
    return {kiln::tensor({double(i), 10.0 * double(i)}), kiln::tensor(i)};
  }
  std::optional<size_t> size() const override { return n; }
  size_t n;
  int64_t throw_at;
};

// The targets of every batch of one epoch.
template <typename Loader>
std::vector<std::vector<int64_t>> epoch(Loader& loader) {
  std::vector<std::vector<int64_t>> batches;
  for (auto& batch : loader) {
    EXPECT_EQ(batch.data.size(0), batch.target.size(0));
    EXPECT_EQ(batch.data.size(1), 2);
    Tensor t = batch.target.contiguous();
    const int64_t* p = t.template data_ptr<int64_t>();
    batches.emplace_back(p, p + t.numel());
    // data and target belong to the same example
    Tensor d = batch.data.contiguous();
    for (size_t k = 0; k < batches.back().size(); ++k) {
      EXPECT_EQ(d.template data_ptr<float>()[2 * k], float(p[k]));
    }
  }
  return batches;
}

std::vector<int64_t> flat(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> all;
  for (const auto& b : batches) all.insert(all.end(), b.begin(), b.end());
  return all;
}

TEST(DataLoader, SequentialBatchesAndDropLast) {
  auto loader = make_data_loader<SequentialSampler>(Numbers(10).map(Stack<>()), 3);
  EXPECT_EQ(epoch(*loader),
            (std::vector<std::vector<int64_t>>{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9}}));
  auto dropping = make_data_loader<SequentialSampler>(
      Numbers(10).map(Stack<>()), DataLoaderOptions().batch_size(3).drop_last(true));
  EXPECT_EQ(epoch(*dropping), (std::vector<std::vector<int64_t>>{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}}));
  // An exact multiple loses nothing with drop_last.
  auto exact = make_data_loader<SequentialSampler>(
      Numbers(6).map(Stack<>()), DataLoaderOptions().batch_size(3).drop_last(true));
  EXPECT_EQ(flat(epoch(*exact)), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST(DataLoader, ShuffledEpochsCoverDatasetOnceAndAreSeeded) {
  auto loader = make_data_loader(Numbers(37).map(Stack<>()), RandomSampler(37, uint64_t{7}),
                                 DataLoaderOptions().batch_size(8));
  std::vector<int64_t> sorted(37);
  for (int64_t i = 0; i < 37; ++i) sorted[i] = i;
  auto e1 = flat(epoch(*loader)), e2 = flat(epoch(*loader));
  EXPECT_NE(e1, sorted);  // shuffled
  EXPECT_NE(e1, e2);      // a new permutation each epoch
  for (auto e : {e1, e2}) {
    std::sort(e.begin(), e.end());
    EXPECT_EQ(e, sorted);  // every example exactly once
  }
  auto again = make_data_loader(Numbers(37).map(Stack<>()), RandomSampler(37, uint64_t{7}),
                                DataLoaderOptions().batch_size(8));
  EXPECT_EQ(flat(epoch(*again)), e1);
  EXPECT_EQ(flat(epoch(*again)), e2);
  auto other = make_data_loader(Numbers(37).map(Stack<>()), RandomSampler(37, uint64_t{8}), 8);
  EXPECT_NE(flat(epoch(*other)), e1);
}

TEST(DataLoader, DefaultRandomSamplerFollowsManualSeed) {
  manual_seed(123);
  auto a = make_data_loader(Numbers(20).map(Stack<>()), 4);
  manual_seed(123);
  auto b = make_data_loader(Numbers(20).map(Stack<>()), 4);
  EXPECT_EQ(epoch(*a), epoch(*b));
}

TEST(DataLoader, WorkersGiveTheSameBatchesInOrder) {
  for (size_t workers : {1, 2, 4}) {
    auto serial = make_data_loader(Numbers(53).map(Stack<>()), RandomSampler(53, uint64_t{3}),
                                   DataLoaderOptions().batch_size(5));
    auto parallel = make_data_loader(Numbers(53).map(Stack<>()), RandomSampler(53, uint64_t{3}),
                                     DataLoaderOptions().batch_size(5).workers(workers));
    for (int e = 0; e < 2; ++e)
      EXPECT_EQ(epoch(*parallel), epoch(*serial)) << workers << " workers";
  }
}

TEST(DataLoader, EarlyBreakDoesNotHangAndNextEpochIsComplete) {
  auto loader = make_data_loader<SequentialSampler>(
      Numbers(100).map(Stack<>()), DataLoaderOptions().batch_size(2).workers(3).max_jobs(4));
  int seen = 0;
  for (auto& batch : *loader) {
    (void)batch;
    if (++seen == 2) break;
  }
  EXPECT_EQ(seen, 2);
  EXPECT_EQ(flat(epoch(*loader)).size(), 100u);
  for (auto& batch : *loader) {  // break again; the destructor stops the workers
    (void)batch;
    break;
  }
}

TEST(DataLoader, WorkerExceptionsReachTheConsumer) {
  for (size_t workers : {0, 2}) {
    auto loader =
        make_data_loader<SequentialSampler>(Numbers(20, /*throw_at=*/13).map(Stack<>()),
                                            DataLoaderOptions().batch_size(4).workers(workers));
    std::vector<int64_t> before;
    try {
      for (auto& batch : *loader) before.push_back(batch.target.template data_ptr<int64_t>()[0]);
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("Numbers: cannot load example 13"), std::string::npos);
    }
    EXPECT_EQ(before, (std::vector<int64_t>{0, 4, 8})) << workers << " workers";
  }
}

TEST(DataLoader, UnmappedDatasetYieldsVectorsOfExamples) {
  auto loader = make_data_loader<SequentialSampler>(Numbers(5), 2);
  std::vector<size_t> sizes;
  for (auto& batch : *loader) {
    sizes.push_back(batch.size());
    EXPECT_EQ(batch[0].target.template data_ptr<int64_t>()[0] % 2, 0);
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{2, 2, 1}));
}

TEST(DataLoader, RejectsZeroBatchSize) {
  EXPECT_THROW(make_data_loader(Numbers(5), DataLoaderOptions().batch_size(0)), Error);
}

TEST(Samplers, SequentialAndRandomIndices) {
  SequentialSampler seq(5);
  EXPECT_EQ(*seq.next(2), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(*seq.next(10), (std::vector<size_t>{2, 3, 4}));
  EXPECT_FALSE(seq.next(2).has_value());
  seq.reset(3);
  EXPECT_EQ(*seq.next(5), (std::vector<size_t>{0, 1, 2}));
  RandomSampler rnd(6, uint64_t{1});
  auto all = *rnd.next(6);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_FALSE(rnd.next(1).has_value());
}

TEST(TensorDatasets, RowsAndStacking) {
  Tensor x = kiln::arange(12, TensorOptions(kFloat32)).reshape({4, 3});
  data::datasets::TensorDataset rows(x);
  EXPECT_EQ(rows.size().value(), 4u);
  auto loader = make_data_loader<SequentialSampler>(rows.map(Stack<data::TensorExample>()),
                                                    DataLoaderOptions().batch_size(3));
  std::vector<int64_t> firsts;
  for (auto& batch : *loader)
    firsts.push_back(int64_t(batch.data.contiguous().data_ptr<float>()[0]));
  EXPECT_EQ(firsts, (std::vector<int64_t>{0, 9}));

  Tensor y = kiln::arange(4, TensorOptions(kInt64));
  data::datasets::TensorPairDataset pairs(x, y);
  auto e = pairs.get(2);
  EXPECT_EQ(e.data.data_ptr<float>()[0], 6.0f);
  EXPECT_EQ(e.target.data_ptr<int64_t>()[0], 2);
  EXPECT_THROW(data::datasets::TensorPairDataset(x, kiln::arange(3, TensorOptions(kInt64))), Error);
}

TEST(Transforms, NormalizeAndLambda) {
  auto ds = Numbers(4)
                .map(data::transforms::Normalize<>(1.0, 2.0))
                .map(data::transforms::Lambda<Example<>>([](Example<> e) {
                  e.target = e.target + 100;
                  return e;
                }))
                .map(Stack<>());
  auto batch = ds.get_batch(std::vector<size_t>{3});
  EXPECT_FLOAT_EQ(batch.data.contiguous().data_ptr<float>()[0], 1.0f);   // (3 - 1) / 2
  EXPECT_FLOAT_EQ(batch.data.contiguous().data_ptr<float>()[1], 14.5f);  // (30 - 1) / 2
  EXPECT_EQ(batch.target.data_ptr<int64_t>()[0], 103);
}

TEST(RandomSplit, DisjointSeededSplits) {
  auto parts = data::random_split(Numbers(10), {7, 3}, 42);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].size().value(), 7u);
  EXPECT_EQ(parts[1].size().value(), 3u);
  std::set<size_t> seen;
  for (auto& p : parts)
    for (size_t i : p.indices()) EXPECT_TRUE(seen.insert(i).second);
  EXPECT_EQ(seen.size(), 10u);
  EXPECT_EQ(parts[1].get(0).target.data_ptr<int64_t>()[0], int64_t(parts[1].indices()[0]));
  EXPECT_EQ(data::random_split(Numbers(10), {7, 3}, 42)[0].indices(), parts[0].indices());
  EXPECT_NE(data::random_split(Numbers(10), {7, 3}, 43)[0].indices(), parts[0].indices());
  EXPECT_THROW(parts[1].get(3), Error);
  try {
    data::random_split(Numbers(10), {7, 4}, 1);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sum of input lengths (11) does not equal the length of "
                                         "the input dataset (10)"),
              std::string::npos)
        << e.what();
  }
  // A split feeds a DataLoader like any dataset.
  auto loader = make_data_loader<SequentialSampler>(std::move(parts[0]).map(Stack<>()), 7);
  EXPECT_EQ(flat(epoch(*loader)).size(), 7u);
}

// A dataset whose examples take `delay` to load.
struct Slow : data::datasets::Dataset<Slow> {
  explicit Slow(std::chrono::milliseconds delay) : delay(delay) {}
  Example<> get(size_t index) override {
    std::this_thread::sleep_for(delay);
    return {kiln::tensor({double(index), 10.0 * double(index)}),
            kiln::tensor(static_cast<int64_t>(index))};
  }
  std::optional<size_t> size() const override { return 4; }
  std::chrono::milliseconds delay;
};

TEST(DataLoader, TimeoutRaisesWhenWorkersAreTooSlow) {
  using namespace std::chrono_literals;
  auto slow = make_data_loader<SequentialSampler>(
      Slow(300ms).map(Stack<>()),
      DataLoaderOptions().batch_size(2).workers(1).timeout(20ms).enforce_ordering(false));
  try {
    for (auto& batch : *slow) (void)batch;
    FAIL() << "no timeout";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("within 20 ms"), std::string::npos) << e.what();
  }
  auto fast = make_data_loader<SequentialSampler>(
      Slow(0ms).map(Stack<>()), DataLoaderOptions().batch_size(2).workers(2).timeout(10s));
  EXPECT_EQ(flat(epoch(*fast)), (std::vector<int64_t>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace kiln
