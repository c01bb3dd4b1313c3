#pragma once
// Device: where a tensor's storage lives. Every allocator and kernel table is keyed by its type.
#include <cstdint>
#include <ostream>
#include <string>

namespace kiln {

// PrivateUse1 is the slot for an out-of-tree backend (PyTorch's spelling); the backend names it
// with rename_privateuse1_backend ("kilntest" in tests/device_backend).
enum class DeviceType : int8_t { CPU = 0, CUDA = 1, PrivateUse1 = 2 };
constexpr int kNumDeviceTypes = 3;
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;
constexpr DeviceType kPrivateUse1 = DeviceType::PrivateUse1;

// "cpu", "cuda", or the PrivateUse1 backend's name ("privateuseone" until renamed).
std::string device_type_name(DeviceType t);
void rename_privateuse1_backend(const std::string& name);

class Device {
 public:
  Device() = default;
  Device(DeviceType t, int index = -1) : type_(t), index_(static_cast<int8_t>(index)) {}  // NOLINT
  Device(const std::string& spec);  // NOLINT: "cpu", "cuda", "cuda:1", as libtorch's
  Device(const char* spec) : Device(std::string(spec)) {}  // NOLINT

  DeviceType type() const { return type_; }
  int8_t index() const { return index_; }  // -1: the current device of that type
  bool has_index() const { return index_ != -1; }
  void set_index(int8_t index) { index_ = index; }
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  // `cuda` (the current device) equals `cuda:N` when N is the current device, as a tensor
  // made on `cuda` reports `cuda:N`.
  bool operator==(const Device& o) const;
  bool operator!=(const Device& o) const { return !(*this == o); }
  // This device with the current index filled in (CPU keeps -1, as PyTorch's `cpu`).
  Device resolved() const;
  std::string str() const;

 private:
  DeviceType type_ = DeviceType::CPU;
  int8_t index_ = -1;
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
