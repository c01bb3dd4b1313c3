#pragma once
// Device: where a tensor's storage lives. Every allocator and kernel table is keyed by its type.
#include <cstdint>
#include <ostream>
#include <string>

namespace kiln {

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
constexpr int kNumDeviceTypes = 2;
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;

struct Device {
  DeviceType type = DeviceType::CPU;
  int8_t index = -1;  // -1: the current device of that type

  Device() = default;
  Device(DeviceType t, int index = -1) : type(t), index(static_cast<int8_t>(index)) {}
  explicit Device(const std::string& spec);  // "cpu", "cuda", "cuda:1"

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  std::string str() const;
};
std::ostream& operator<<(std::ostream& os, const Device& d);

// The device factory functions use when none is given (torch.set_default_device).
Device default_device();
void set_default_device(Device d);

// Sets the default device for a scope (the C++ spelling of `with torch.device(...)`).
class DeviceGuard {
 public:
  explicit DeviceGuard(Device d) : prev_(default_device()) { set_default_device(d); }
  ~DeviceGuard() { set_default_device(prev_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  Device prev_;
};

}  // namespace kiln
