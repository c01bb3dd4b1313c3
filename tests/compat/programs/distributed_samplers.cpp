// Sharding a dataset across replicas with DistributedRandomSampler / DistributedSequentialSampler,
// as a data-parallel training script does, and feeding one shard through a DataLoader.
#include <torch/data/samplers/distributed.h>
#include <torch/torch.h>

using torch::data::samplers::DistributedRandomSampler;
using torch::data::samplers::DistributedSequentialSampler;

std::vector<size_t> drain(torch::data::samplers::Sampler<>& sampler, size_t batch_size) {
  std::vector<size_t> all;
  while (auto batch = sampler.next(batch_size)) all.insert(all.end(), batch->begin(), batch->end());
  return all;
}

int main() {
  const size_t size = 10, replicas = 3;
  int failures = 0;
  // With duplicates allowed, every replica sees ceil(10/3) = 4 indices and together they cover
  // all examples; the random order depends on the epoch only, so replicas agree on it.
  for (size_t epoch = 0; epoch < 2; ++epoch) {
    std::set<size_t> seen;
    for (size_t rank = 0; rank < replicas; ++rank) {
      DistributedRandomSampler sampler(size, replicas, rank, /*allow_duplicates=*/true);
      sampler.set_epoch(epoch);
      sampler.reset();
      std::vector<size_t> indices = drain(sampler, 3);
      if (indices.size() != 4) ++failures;
      seen.insert(indices.begin(), indices.end());
    }
    if (seen.size() != size) ++failures;
  }
  DistributedRandomSampler a(size, replicas, 0), b(size, replicas, 0);
  a.set_epoch(5);
  b.set_epoch(5);
  a.reset();
  b.reset();
  if (drain(a, 10) != drain(b, 10)) ++failures;

  // Without duplicates each replica gets floor(10/3) = 3 consecutive indices.
  DistributedSequentialSampler sequential(size, replicas, 1, /*allow_duplicates=*/false);
  std::vector<size_t> expected = {3, 4, 5};
  if (drain(sequential, 2) != expected) ++failures;

  // One replica's shard through a DataLoader.
  torch::Tensor data = torch::arange(20).to(torch::kFloat).view({10, 2});
  torch::Tensor labels = torch::arange(10);
  struct Pairs : torch::data::datasets::Dataset<Pairs> {
    torch::Tensor data, labels;
    Pairs(torch::Tensor d, torch::Tensor l) : data(std::move(d)), labels(std::move(l)) {}
    torch::data::Example<> get(size_t i) override { return {data[i], labels[i]}; }
    torch::optional<size_t> size() const override { return data.size(0); }
  };
  auto loader = torch::data::make_data_loader(
      Pairs(data, labels).map(torch::data::transforms::Stack<>()),
      DistributedSequentialSampler(size, 2, 1), torch::data::DataLoaderOptions().batch_size(2));
  int64_t label_sum = 0;
  for (auto& batch : *loader) label_sum += batch.target.sum().item<int64_t>();
  if (label_sum != 5 + 6 + 7 + 8 + 9) ++failures;

  std::cout << failures << " failures" << std::endl;
  return failures == 0 ? 0 : 1;
}
