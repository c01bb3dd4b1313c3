#pragma once
// kiln::autocast: PyTorch's torch.autocast for the CPU, as an RAII guard. While one lives on a
// thread, products and convolutions run in its low precision dtype (bfloat16 or float16: their
// float32 inputs are cast), and softmax, normalisations and losses run in float32 (their low
// precision inputs are cast up); other ops follow the usual type promotion. Casts are ops, so
// gradients flow back to float32 parameters in float32.
//
//   {
//     kiln::autocast on(kiln::kCPU, kiln::kBFloat16);
//     Tensor loss = criterion(model(x), y);   // linear layers in bfloat16, the loss in float32
//   }
//   loss.backward();
#include <memory>
#include <string>
#include <vector>

#include "kiln/core/device.h"
#include "kiln/core/dtype.h"

namespace kiln {

class ModeGuard;

class autocast {
 public:
  explicit autocast(Device device = Device(kCPU), ScalarType dtype = kBFloat16,
                    bool enabled = true);
  ~autocast();
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  bool was_enabled_;
  ScalarType was_dtype_;
  std::unique_ptr<ModeGuard> mode_;  // the outermost enabled guard puts the mode on the stack
};

bool is_autocast_enabled();
ScalarType get_autocast_dtype();  // the dtype of the innermost enabled autocast

namespace amp {
// The registry ops autocast runs in the low precision dtype, and those it runs in float32.
const std::vector<std::string>& lower_precision_ops();
const std::vector<std::string>& float32_ops();
}  // namespace amp

}  // namespace kiln
