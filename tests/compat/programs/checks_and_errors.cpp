// Error handling as libtorch code does it, through the specific headers rather than the umbrella:
// TORCH_CHECK with message parts caught as c10::Error and std::exception, TORCH_CHECK_EQ,
// TORCH_INTERNAL_ASSERT, AT_ERROR, TORCH_WARN_ONCE, c10::str and c10::irange.
#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <c10/util/irange.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <iostream>
#include <string>

template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const c10::Error& e) {
    return e.what();
  }
  return "<no error>";
}

at::Tensor checked_matmul(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2, "checked_matmul expects 2-D tensors, got ", a.dim(),
              "-D and ", b.dim(), "-D");
  TORCH_CHECK(a.size(1) == b.size(0), "size mismatch: ", a.sizes(), " @ ", b.sizes());
  return a.mm(b);
}

int main() {
  int failures = 0;
  auto expect_contains = [&](const std::string& text, const std::string& part) {
    if (text.find(part) == std::string::npos) {
      std::cout << "expected '" << part << "' in '" << text << "'" << std::endl;
      ++failures;
    }
  };

  expect_contains(error_of([] {
                    checked_matmul(at::ones({2, 3}), at::ones({2, 3}));
                  }),
                  "size mismatch: [2, 3] @ [2, 3]");
  expect_contains(error_of([] {
                    checked_matmul(at::ones({2}), at::ones({2, 3}));
                  }),
                  "checked_matmul expects 2-D tensors, got 1-D and 2-D");
  expect_contains(error_of([] { TORCH_CHECK(1 + 1 == 3); }), "Expected 1 + 1 == 3 to be true");
  expect_contains(error_of([] { TORCH_CHECK_EQ(2, 3); }), "Check failed: 2 == 3 (2 vs. 3)");
  expect_contains(error_of([] { TORCH_INTERNAL_ASSERT(false, "invariant ", 7); }), "invariant 7");
  expect_contains(error_of([] { AT_ERROR("unsupported mode ", std::string("x")); }),
                  "unsupported mode x");
  try {
    TORCH_CHECK_INDEX(false, "index ", 5, " out of range");
    ++failures;
  } catch (const c10::IndexError& e) {
    expect_contains(e.what(), "index 5 out of range");
  }
  try {
    TORCH_CHECK(false, "plain std::exception");
    ++failures;
  } catch (const std::exception& e) {
    expect_contains(e.what(), "plain std::exception");
  }
  // A Kiln error from an op is a c10::Error too.
  expect_contains(error_of([] { at::ones({2, 3}).mm(at::ones({2, 3})); }), "mm");

  int warnings = 0;
  for (const auto i : c10::irange(3)) {
    TORCH_WARN_ONCE("warned once, at iteration ", i);
    ++warnings;
  }
  int64_t total = 0;
  for (const auto i : c10::irange(2, 6)) total += i;
  if (total != 2 + 3 + 4 + 5 || warnings != 3) ++failures;
  expect_contains(c10::str("shape ", at::IntArrayRef({2, 3}), " x", 2), "shape [2, 3] x2");

  torch::nn::Linear linear(2, 2);
  torch::optim::SGD sgd(linear->parameters(), torch::optim::SGDOptions(0.1));
  sgd.zero_grad();
  std::cout << failures << " failures" << std::endl;
  return failures == 0 ? 0 : 1;
}
