#pragma once
// One benchmark case and the interface both sides (Kiln, libtorch) implement. The two sides live
// in separate translation units so Kiln's and libtorch's headers never meet.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bench {

enum class Op { Add, Mul, Exp, Gelu, SumAll, SumLastDim, AmaxLastDim, SoftmaxLastDim, Matmul };
const char* op_name(Op op);

struct Case {
  Op op;
  bool bf16;                  // bfloat16 inputs and outputs (float32 otherwise)
  std::vector<int64_t> a, b;  // input shapes (b empty for unary ops)
};

// Prepared inputs for one case; run() computes the op once (keeping the result alive until the
// next run, as `y = op(x)` in a loop does) and result() returns it as float32 values.
class Runner {
 public:
  virtual ~Runner() = default;
  virtual void run() = 0;
  virtual std::vector<float> result() = 0;
};

// Inputs are float32 values; bf16 cases convert them once, outside the timed region.
std::unique_ptr<Runner> make_kiln_runner(const Case& c, const std::vector<float>& a,
                                         const std::vector<float>& b);
std::unique_ptr<Runner> make_torch_runner(const Case& c, const std::vector<float>& a,
                                          const std::vector<float>& b);
void set_kiln_threads(int n);
void set_torch_threads(int n);
int kiln_threads();
int torch_threads();
std::string torch_version();
std::string kiln_bf16_matmul_path();

}  // namespace bench
