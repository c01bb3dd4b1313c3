// A tiny out-of-tree device backend for the tests: device type PrivateUse1, named "kilntest",
// with two devices whose memory is host memory the backend tracks. It has one native kernel
// (add), and "pinned" host memory; every other op runs through the CPU fallback.
// tests/core/device_backend_test.cpp uses it to test what the core does with a device that is not
// the CPU, on machines without a GPU.
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "kiln/core/device_backend.h"
#include "kiln/core/error.h"
#include "kiln/ops/composite_kernels.h"
#include "kiln/ops/registry.h"
#include "tests/device_backend/kilntest_backend.h"

namespace {

constexpr int kDevices = 2;
thread_local int t_current = 0;
std::mutex g_mutex;
std::map<const char*, std::pair<size_t, int>>& live() {  // pointer -> (bytes, device)
  static std::map<const char*, std::pair<size_t, int>> m;
  return m;
}
kilntest::Counters g_counters;

// The device a pointer into backend memory belongs to (-1: not backend memory).
int owner(const void* p, size_t nbytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = live().upper_bound(static_cast<const char*>(p));
  if (it == live().begin()) return -1;
  --it;
  const char* end = it->first + it->second.first;
  return static_cast<const char*>(p) + nbytes <= end ? it->second.second : -1;
}

class TestAllocator final : public kiln::Allocator {
 public:
  void* allocate(size_t nbytes) override {
    void* p = std::malloc(nbytes ? nbytes : 1);
    std::lock_guard<std::mutex> lock(g_mutex);
    live()[static_cast<const char*>(p)] = {nbytes ? nbytes : 1, t_current};
    ++g_counters.allocations[t_current];
    return p;
  }
  void deallocate(void* p, size_t) override {
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      KILN_CHECK(live().erase(static_cast<const char*>(p)) == 1,
                 "kilntest: freeing memory it did not allocate");
    }
    std::free(p);
  }
};

// "Pinned" host memory: plain host memory, counted.
class TestHostAllocator final : public kiln::Allocator {
 public:
  void* allocate(size_t nbytes) override {
    ++g_counters.pinned_allocations;
    return std::malloc(nbytes ? nbytes : 1);
  }
  void deallocate(void* p, size_t) override { std::free(p); }
};

class TestBackend final : public kiln::DeviceBackend {
 public:
  kiln::DeviceType type() const override { return kiln::kPrivateUse1; }
  int device_count() const override { return kDevices; }
  int current_device() const override { return t_current; }
  void set_current_device(int index) override {
    KILN_CHECK(index >= 0 && index < kDevices, "kilntest: no device ", index);
    t_current = index;
  }
  kiln::Allocator* allocator() override { return &allocator_; }
  kiln::Allocator* host_allocator() override { return &host_allocator_; }
  void copy_bytes(void* dst, kiln::Device dst_device, const void* src, kiln::Device src_device,
                  size_t nbytes) override {
    // Each side must be memory of the device it is said to be on.
    KILN_CHECK(dst_device.is_cpu() == (owner(dst, nbytes) < 0) &&
                   src_device.is_cpu() == (owner(src, nbytes) < 0),
               "kilntest: copy_bytes given memory of the wrong device");
    KILN_CHECK(dst_device.is_cpu() || owner(dst, nbytes) == dst_device.index(),
               "kilntest: copy_bytes to device ", dst_device, " given memory of another device");
    std::memcpy(dst, src, nbytes);
    ++g_counters.copies;
  }
  void synchronize(int) override {}

 private:
  TestAllocator allocator_;
  TestHostAllocator host_allocator_;
};

}  // namespace

namespace kilntest {
const Counters& counters() { return g_counters; }
}  // namespace kilntest

extern "C" __attribute__((visibility("default"))) void kiln_device_backend_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    kiln::rename_privateuse1_backend("kilntest");
    kiln::register_device_backend(std::make_unique<TestBackend>());
    // The composite kernels run here through the ops they call (the op table checks them).
    kiln::set_composite_kernels(kiln::kPrivateUse1);
    // Native add: its memory is host memory, so the CPU kernel can run on it directly.
    const kiln::KernelFn cpu_add = kiln::get_op("add").kernels[static_cast<int>(kiln::kCPU)];
    kiln::set_kernel("add", kiln::kPrivateUse1,
                     [cpu_add](const std::vector<kiln::Tensor>& in, std::vector<kiln::Tensor>& out,
                               const kiln::Attrs& attrs) {
                       ++g_counters.native_adds;
                       cpu_add(in, out, attrs);
                     });
  });
}
