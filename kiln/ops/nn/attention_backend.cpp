#include "kiln/ops/nn/attention_backend.h"

#include <algorithm>

#include "kiln/core/error.h"

namespace kiln::nn::attention {
namespace {

const std::vector<SDPBackend>& default_order() {
  static const std::vector<SDPBackend> order{
      SDPBackend::cudnn_attention, SDPBackend::flash_attention, SDPBackend::efficient_attention,
      SDPBackend::math, SDPBackend::overrideable};
  return order;
}

std::vector<SDPBackend>& enabled() {
  thread_local std::vector<SDPBackend> backends = default_order();
  return backends;
}

}  // namespace

const char* backend_name(SDPBackend b) {
  switch (b) {
    case SDPBackend::math:
      return "math";
    case SDPBackend::flash_attention:
      return "flash_attention";
    case SDPBackend::efficient_attention:
      return "efficient_attention";
    case SDPBackend::cudnn_attention:
      return "cudnn_attention";
    case SDPBackend::overrideable:
      return "overrideable";
    case SDPBackend::error:
      break;
  }
  return "error";
}

const std::vector<SDPBackend>& enabled_backends() { return enabled(); }

sdpa_kernel::sdpa_kernel(std::vector<SDPBackend> backends, bool set_priority)
    : previous_(enabled()) {
  for (SDPBackend b : backends)
    KILN_CHECK(b != SDPBackend::error, "sdpa_kernel: SDPBackend::error is not a backend");
  if (!set_priority) {
    std::vector<SDPBackend> ordered;
    for (SDPBackend b : default_order())
      if (std::find(backends.begin(), backends.end(), b) != backends.end()) ordered.push_back(b);
    backends = std::move(ordered);
  }
  backends.erase(std::unique(backends.begin(), backends.end()), backends.end());
  enabled() = std::move(backends);
}

sdpa_kernel::~sdpa_kernel() { enabled() = std::move(previous_); }

}  // namespace kiln::nn::attention
