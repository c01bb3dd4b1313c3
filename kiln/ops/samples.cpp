#include "kiln/ops/samples.h"
#include "kiln/ops/samples_rng.h"

#include <random>

#include "kiln/ops/ops.h"

namespace kiln::samples {

namespace {
constexpr uint64_t kSeed = 1234;
std::mt19937_64& rng() {
  static std::mt19937_64 engine(kSeed);
  return engine;
}
}  // namespace

void reset_rng() { rng().seed(kSeed); }

Tensor make(std::vector<int64_t> shape, ScalarType dtype, double low, double high,
            bool noncontiguous) {
  if (dtype == kUInt8 && low < 0) {  // unsigned: keep the same spread, shifted to >= 0
    high -= low;
    low = 0;
  }
  std::vector<int64_t> alloc = shape;
  if (noncontiguous && !alloc.empty()) alloc.back() += 3;  // padding after each row
  int64_t n = 1;
  for (int64_t s : alloc) n *= s;
  std::vector<double> vals(n);
  std::uniform_real_distribution<double> dist(low, high);
  for (auto& v : vals) {
    v = dist(rng());
    if (dtype == kBool)
      v = v > (low + high) / 2;
    else if (is_integral(dtype))
      v = std::floor(v);
  }
  Tensor base = tensor(vals, TensorOptions(kFloat64)).view(SymIntList(alloc)).to(dtype);
  if (!noncontiguous || shape.empty()) return base;
  return base.narrow(-1, 0, shape.back());
}

std::vector<OpSample> unary(ScalarType dt, double low, double high) {
  return {
      {{make({}, dt, low, high)}, {}, "0-dim"},
      {{make({7}, dt, low, high)}, {}, "vector"},
      {{make({3, 5}, dt, low, high)}, {}, "matrix"},
      {{make({4, 6}, dt, low, high, true)}, {}, "non-contiguous"},
      {{make({5, 4}, dt, low, high).t()}, {}, "transposed"},
      {{make({0, 3}, dt, low, high)}, {}, "zero-size"},
  };
}

std::vector<OpSample> binary(ScalarType dt, double low, double high, double low2, double high2) {
  return {
      {{make({3, 4}, dt, low, high), make({3, 4}, dt, low2, high2)}, {}, "same shape"},
      {{make({3, 1}, dt, low, high), make({1, 4}, dt, low2, high2)}, {}, "broadcast both"},
      {{make({2, 3, 4}, dt, low, high), make({4}, dt, low2, high2)}, {}, "broadcast rank"},
      {{make({5}, dt, low, high), make({}, dt, low2, high2)}, {}, "0-dim other"},
      {{make({4, 5}, dt, low, high, true), make({5, 4}, dt, low2, high2).t()},
       {},
       "non-contiguous"},
      {{make({0, 4}, dt, low, high), make({4}, dt, low2, high2)}, {}, "zero-size"},
  };
}

}  // namespace kiln::samples
