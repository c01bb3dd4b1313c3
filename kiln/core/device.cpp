#include "kiln/core/device.h"

#include <cstdint>

#include "kiln/core/error.h"

namespace kiln {

Device::Device(const std::string& spec) {
  auto colon = spec.find(':');
  std::string kind = spec.substr(0, colon);
  if (kind == "cpu") {
    type_ = DeviceType::CPU;
  } else if (kind == "cuda") {
    type_ = DeviceType::CUDA;
  } else {
    KILN_FAIL("Device: unknown device '", spec, "'; expected 'cpu', 'cuda' or 'cuda:N'");
  }
  if (colon != std::string::npos) {
    int parsed = -1;
    try {
      size_t used = 0;
      parsed = std::stoi(spec.substr(colon + 1), &used);
      if (used != spec.size() - colon - 1) parsed = -1;
    } catch (const std::exception&) {
    }
    KILN_CHECK(parsed >= 0 && parsed <= INT8_MAX, "Device: bad device index in '", spec,
               "'; expected an integer in [0, 127]");
    index_ = static_cast<int8_t>(parsed);
  }
}

std::string Device::str() const {
  std::string s = type_ == DeviceType::CPU ? "cpu" : "cuda";
  if (index_ >= 0) s += ":" + std::to_string(index_);
  return s;
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

namespace {
thread_local Device t_default_device{};
}
Device default_device() { return t_default_device; }
void set_default_device(Device d) { t_default_device = d; }

}  // namespace kiln
