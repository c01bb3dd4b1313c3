#include "kiln/core/device.h"

#include <cstdint>

#include "kiln/core/device_backend.h"
#include "kiln/core/error.h"

namespace kiln {
namespace {
std::string& privateuse1_name() {
  static std::string name = "privateuseone";
  return name;
}
}  // namespace

std::string device_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::CPU:
      return "cpu";
    case DeviceType::CUDA:
      return "cuda";
    case DeviceType::PrivateUse1:
      return privateuse1_name();
  }
  return "unknown";
}

void rename_privateuse1_backend(const std::string& name) {
  KILN_CHECK(!name.empty() && name != "cpu" && name != "cuda" && name != "meta" &&
                 name.find(':') == std::string::npos,
             "rename_privateuse1_backend: '", name, "' cannot name a device type");
  privateuse1_name() = name;
}

Device::Device(const std::string& spec) {
  auto colon = spec.find(':');
  std::string kind = spec.substr(0, colon);
  if (kind == "cpu") {
    type_ = DeviceType::CPU;
  } else if (kind == "cuda") {
    type_ = DeviceType::CUDA;
  } else {
    load_device_backends();  // an out-of-tree backend names its device type when it loads
    KILN_CHECK(kind == privateuse1_name(), "Device: unknown device '", spec,
               "'; expected 'cpu', 'cuda' or 'cuda:N'",
               privateuse1_name() == "privateuseone" ? "" : ", or '" + privateuse1_name() + "'");
    type_ = DeviceType::PrivateUse1;
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

bool Device::operator==(const Device& o) const {
  if (type_ != o.type_) return false;
  if (index_ == o.index_ || type_ == DeviceType::CPU) return true;
  return resolved().index_ == o.resolved().index_;
}

Device Device::resolved() const {
  if (has_index() || type_ == DeviceType::CPU) return *this;
  DeviceBackend* b = device_backend(type_);
  return Device(type_, b ? b->current_device() : 0);
}

std::string Device::str() const {
  std::string s = device_type_name(type_);
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
