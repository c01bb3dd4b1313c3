#include "kiln/backend/cuda/generated_kernels.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "kiln/backend/cuda/nvrtc_program.h"
#include "kiln/backend/cuda/runtime.h"

namespace kiln::cuda {
namespace {

struct DeviceInfo {
  std::string arch;
  int sms = 0;
};

struct Loaded {
  std::mutex mu;
  std::unordered_map<int, DeviceInfo> devices;
  std::unordered_map<std::string, cudaKernel_t> kernels;  // device + '|' + kernel name
};

Loaded& loaded() {
  static Loaded* l = new Loaded();  // never destroyed: the libraries stay loaded until exit
  return *l;
}

DeviceInfo device_info(int dev) {
  Loaded& l = loaded();
  {
    std::lock_guard<std::mutex> lock(l.mu);
    if (auto it = l.devices.find(dev); it != l.devices.end()) return it->second;
  }
  int major = 0, minor = 0, sms = 0;
  detail::check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev),
                "cudaDeviceGetAttribute");
  detail::check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev),
                "cudaDeviceGetAttribute");
  detail::check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev),
                "cudaDeviceGetAttribute");
  DeviceInfo info{nvrtc_arch(major, minor), sms};
  std::lock_guard<std::mutex> lock(l.mu);
  return l.devices.emplace(dev, info).first->second;
}

}  // namespace

std::string named_kernel(std::string body, const std::string& name) {
  return body.replace(body.find("KERNEL"), 6, name);
}

std::string kernel_source(const std::string& types, const std::string& body,
                          const std::string& name) {
  return "#include <cstdint>\n\n#include \"kiln/core/half.h\"\n\n" + types +
         named_kernel(body, name);
}

cudaKernel_t generated_kernel(int dev, const std::string& name,
                              const std::function<std::string()>& source) {
  Loaded& l = loaded();
  const std::string key = std::to_string(dev) + '|' + name;
  {
    std::lock_guard<std::mutex> lock(l.mu);
    if (auto it = l.kernels.find(key); it != l.kernels.end()) return it->second;
  }
  const std::string ptx = compile_to_ptx(source(), name, device_info(dev).arch);
  std::lock_guard<std::mutex> lock(l.mu);
  if (auto it = l.kernels.find(key); it != l.kernels.end()) return it->second;
  cudaLibrary_t lib = nullptr;
  detail::check(cudaLibraryLoadData(&lib, ptx.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0),
                "cuda: cudaLibraryLoadData (a generated kernel)");
  cudaKernel_t fn = nullptr;
  detail::check(cudaLibraryGetKernel(&fn, lib, name.c_str()), "cuda: cudaLibraryGetKernel");
  l.kernels.emplace(key, fn);
  return fn;
}

int multiprocessors(int dev) { return device_info(dev).sms; }

int resident_blocks(cudaKernel_t fn, unsigned threads) {
  static std::mutex mu;
  static auto* known = new std::unordered_map<std::string, int>();
  const std::string key = std::to_string(reinterpret_cast<uintptr_t>(fn)) + "|" +
                          std::to_string(threads) + "|" + std::to_string(detail::current_device());
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = known->find(key); it != known->end()) return it->second;
  }
  int blocks = 0;
  detail::check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                    &blocks, reinterpret_cast<const void*>(fn), static_cast<int>(threads), 0),
                "cuda: cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  blocks = std::max(blocks, 1);
  std::lock_guard<std::mutex> lock(mu);
  known->emplace(key, blocks);
  return blocks;
}

}  // namespace kiln::cuda
