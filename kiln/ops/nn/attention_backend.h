#pragma once
// Which scaled_dot_product_attention backends may run (PyTorch's torch.nn.attention): a
// thread-local set and order that the RAII guard sdpa_kernel replaces for its scope.
//
//   { kiln::nn::attention::sdpa_kernel guard({SDPBackend::math}); y = F::sdpa(q, k, v); }
#include <cstdint>
#include <vector>

namespace kiln::nn::attention {

// at::SDPBackend's values.
enum class SDPBackend : int8_t {
  error = -1,
  math = 0,
  flash_attention = 1,
  efficient_attention = 2,
  cudnn_attention = 3,
  overrideable = 4,
};

const char* backend_name(SDPBackend b);

// The backends this thread may use, in the order they are tried.
const std::vector<SDPBackend>& enabled_backends();

// Allows only `backends` while it lives. With set_priority, they are tried in the order given;
// otherwise in the default order (flash_attention, then math on the CPU).
class sdpa_kernel {
 public:
  sdpa_kernel(std::vector<SDPBackend> backends, bool set_priority = false);
  explicit sdpa_kernel(SDPBackend backend) : sdpa_kernel(std::vector<SDPBackend>{backend}) {}
  ~sdpa_kernel();
  sdpa_kernel(const sdpa_kernel&) = delete;
  sdpa_kernel& operator=(const sdpa_kernel&) = delete;

 private:
  std::vector<SDPBackend> previous_;
};

}  // namespace kiln::nn::attention
