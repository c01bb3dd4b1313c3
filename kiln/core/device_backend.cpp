#include "kiln/core/device_backend.h"

#include <dlfcn.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>

#include "kiln/core/error.h"

namespace kiln {
namespace {

std::array<std::unique_ptr<DeviceBackend>, kNumDeviceTypes>& backends() {
  static std::array<std::unique_ptr<DeviceBackend>, kNumDeviceTypes> b;
  return b;
}
std::mutex& backends_mutex() {
  static std::mutex m;
  return m;
}

// The folder libkiln.so was loaded from: backends live in its `kiln/backends` subfolder, in the
// install tree (lib/kiln/backends) as in the build tree.
std::filesystem::path library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&load_device_backends), &info) == 0 || !info.dli_fname)
    return {};
  return std::filesystem::path(info.dli_fname).parent_path();
}

// Libraries named by a list of files and folders (a folder contributes its *.so files, sorted).
void add_libraries(const std::filesystem::path& p, std::vector<std::filesystem::path>& out) {
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) {
    std::vector<std::filesystem::path> found;
    for (const auto& e : std::filesystem::directory_iterator(p, ec))
      if (e.path().extension() == ".so") found.push_back(e.path());
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  } else if (!p.empty()) {
    out.push_back(p);
  }
}

std::string load_library(const std::filesystem::path& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return std::string("failed: ") + dlerror();
  using Init = void (*)();
  auto init = reinterpret_cast<Init>(dlsym(handle, "kiln_device_backend_init"));
  if (!init) return "failed: it exports no kiln_device_backend_init()";
  try {
    init();
  } catch (const std::exception& e) {
    return std::string("failed: its initialisation threw: ") + e.what();
  }
  return "loaded";
}

std::vector<std::string> autoload() {
  std::vector<std::string> log;
  const char* off = std::getenv("KILN_DEVICE_BACKEND_AUTOLOAD");
  if (off && std::string(off) == "0") {
    log.push_back("autoload: off (KILN_DEVICE_BACKEND_AUTOLOAD=0)");
    return log;
  }
  std::vector<std::filesystem::path> libs;
  const std::filesystem::path installed = library_dir() / "kiln" / "backends";
  std::error_code ec;
  if (std::filesystem::is_directory(installed, ec)) add_libraries(installed, libs);
  if (const char* extra = std::getenv("KILN_DEVICE_BACKENDS")) {
    std::string list = extra;
    for (size_t begin = 0; begin <= list.size();) {
      size_t end = list.find(':', begin);
      if (end == std::string::npos) end = list.size();
      add_libraries(list.substr(begin, end - begin), libs);
      begin = end + 1;
    }
  }
  for (const auto& lib : libs) {
    std::string result = load_library(lib);
    if (result != "loaded") std::cerr << "kiln: device backend " << lib << " " << result << "\n";
    log.push_back(lib.string() + ": " + result);
  }
  return log;
}

}  // namespace

void register_device_backend(std::unique_ptr<DeviceBackend> backend) {
  KILN_CHECK(backend && backend->type() != DeviceType::CPU,
             "register_device_backend: expected a backend for a device other than the CPU");
  std::lock_guard<std::mutex> lock(backends_mutex());
  auto& slot = backends()[static_cast<int>(backend->type())];
  if (!slot) slot = std::move(backend);
}

const std::vector<std::string>& load_device_backends() {
  static const std::vector<std::string> log = autoload();
  return log;
}

void load_device_backend(const std::string& path) {
  std::string result = load_library(path);
  KILN_CHECK(result == "loaded", "load_device_backend: ", path, " ", result);
}

DeviceBackend* device_backend(DeviceType t) {
  if (t == DeviceType::CPU) return nullptr;
  load_device_backends();
  std::lock_guard<std::mutex> lock(backends_mutex());
  return backends()[static_cast<int>(t)].get();
}

DeviceBackend& require_device_backend(DeviceType t, const char* who) {
  DeviceBackend* b = device_backend(t);
  KILN_CHECK(b, who, ": no backend for device type '", device_type_name(t),
             "' is loaded (Kiln looks for backend libraries beside libkiln.so in kiln/backends "
             "and in KILN_DEVICE_BACKENDS)");
  return *b;
}

DeviceIndexGuard::DeviceIndexGuard(Device device) {
  if (device.is_cpu() || !device.has_index()) return;
  backend_ = &require_device_backend(device.type(), "DeviceIndexGuard");
  previous_ = backend_->current_device();
  if (previous_ == device.index()) {
    backend_ = nullptr;
  } else {
    backend_->set_current_device(device.index());
  }
}

DeviceIndexGuard::~DeviceIndexGuard() {
  if (backend_) backend_->set_current_device(previous_);
}

}  // namespace kiln
