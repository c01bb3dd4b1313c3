#pragma once
// Helpers shared by the convolution and pooling tests.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::testing {

// The values PyTorch's tests use: ((i % 7) - 3) / 4 for i = 0, 1, ... in float64.
inline Tensor pattern(std::vector<int64_t> sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(i % 7 - 3) / 4;
  return tensor(v, kFloat64).view(sizes);
}

// ((37 k) % 97 - 48) / 8 for k = 0, 1, ... in float64: distinct values up to 97 elements, so
// maxima are unique (the *_expected.py scripts build the same).
inline Tensor scrambled(std::vector<int64_t> sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    v[static_cast<size_t>(k)] = static_cast<double>((37 * k) % 97 - 48) / 8;
  return tensor(v, kFloat64).view(sizes);
}

// sin(0.7 k + 1) for k = 0, 1, ... shaped like t: the weights of the *_expected.py gradients.
inline Tensor sine_weights(const Tensor& t) {
  std::vector<double> w(static_cast<size_t>(t.numel()));
  for (size_t k = 0; k < w.size(); ++k) w[k] = std::sin(0.7 * static_cast<double>(k) + 1);
  return tensor(w, kFloat64).view(t.sizes());
}

inline std::vector<double> values(const Tensor& t) {
  Tensor c = t.detach().to(kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

inline void expect_values(const Tensor& t, const std::vector<double>& expected, double tol = 1e-9) {
  const std::vector<double> v = values(t);
  ASSERT_EQ(v.size(), expected.size());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], expected[i], tol) << "at " << i;
}

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace kiln::testing
