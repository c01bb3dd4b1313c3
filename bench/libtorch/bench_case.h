#pragma once
// One case of kiln_vs_torch (pointwise, reduction, softmax and matmul calls) and the runners both
// sides implement. The two sides live in separate translation units so Kiln's and libtorch's
// headers never meet.
#include <cstdint>
#include <memory>
#include <vector>

#include "bench/libtorch/timing.h"

namespace bench {

enum class Op {
  Add,
  Mul,
  MulScalar,
  Exp,
  Gelu,
  SumAll,
  SumLastDim,
  AmaxLastDim,
  SoftmaxLastDim,
  Matmul
};
const char* op_name(Op op);

struct Case {
  Op op;
  bool bf16;                  // bfloat16 inputs and outputs (float32 otherwise)
  std::vector<int64_t> a, b;  // input shapes (b empty for unary ops and MulScalar, a * 2.5)
};

// Inputs are float32 values; bf16 cases convert them once, outside the timed region.
std::unique_ptr<Runner> make_kiln_runner(const Case& c, const std::vector<float>& a,
                                         const std::vector<float>& b);
std::unique_ptr<Runner> make_torch_runner(const Case& c, const std::vector<float>& a,
                                          const std::vector<float>& b);

}  // namespace bench
