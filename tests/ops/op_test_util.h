#pragma once
// Helpers for the op-table tests: tolerances, comparison, layout-preserving clones, gradcheck.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln::testing {

struct Tolerance {
  double atol, rtol;
};
Tolerance tolerance(const OpDef& op, ScalarType dtype);
// Compares `actual` (any dtype) with a float64 `expected`; NaNs must match NaNs.
void expect_close(const Tensor& actual, const Tensor& expected, Tolerance tol,
                  const std::string& what);
// Copies with the same sizes, strides and offset in a fresh storage (in-place ops and
// perturbations must not touch the sample).
Tensor clone_preserving_layout(const Tensor& t);
std::vector<Tensor> clone_inputs(const std::vector<Tensor>& inputs);
// The kilntest device backend's library (tests/device_backend): KILN_TEST_BACKEND_PATH from the
// environment (a copy on another machine), else where the build put it.
const char* test_backend_path();
// The same on `device` (wrapped numbers stay on the CPU, as scalar arguments do).
Tensor to_device_preserving_layout(const Tensor& t, Device device);
Tensor meta_like(const Tensor& t);
// Finite-difference check of the op's backward (or, with second_order, of the backward of
// its backward) in float64.
// The number of elements whose analytic gradient was compared (0: the sample had no float64
// input, or its loss needed no gradient).
int64_t gradcheck(const OpDef& op, const OpSample& sample, bool second_order);
const std::set<std::string>& second_order_ops();

// Whether f throws a kiln::Error whose message names the op first ("<op>: ...", ARCHITECTURE.md
// §11) and contains `expected`; when not, the result says what happened instead.
::testing::AssertionResult raises(const std::function<void()>& f, const std::string& op,
                                  const std::string& expected);
// The message of the kiln::Error that f throws, or "<no error>".
std::string error_message(const std::function<void()>& f);

}  // namespace kiln::testing
