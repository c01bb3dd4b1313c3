#include "kiln/data/random_split.h"

#include "kiln/data/samplers.h"

namespace kiln::data::detail {

std::vector<std::vector<size_t>> random_split_indices(size_t size,
                                                      const std::vector<size_t>& lengths,
                                                      uint64_t seed) {
  size_t total = 0;
  for (size_t n : lengths) {
    KILN_CHECK(!__builtin_add_overflow(total, n, &total), "random_split: lengths overflow");
  }
  KILN_CHECK(total == size, "random_split: sum of input lengths (", total,
             ") does not equal the length of the input dataset (", size, ")");
  Generator generator(seed);
  std::vector<size_t> perm = samplers::random_permutation(size, generator);
  std::vector<std::vector<size_t>> splits;
  size_t offset = 0;
  for (size_t n : lengths) {
    splits.emplace_back(perm.begin() + offset, perm.begin() + offset + n);
    offset += n;
  }
  return splits;
}

}  // namespace kiln::data::detail
