#include "kiln/core/cuda.h"

#include "kiln/core/cuda_hooks.h"
#include "kiln/core/device_backend.h"
#include "kiln/core/error.h"
#include "kiln/core/generator.h"

namespace kiln::cuda {
namespace {
CudaHooks* g_hooks = nullptr;

DeviceBackend* cuda_backend() { return device_backend(kCUDA); }

int checked_device(int64_t index, const char* who) {
  const size_t n = device_count();
  if (index == -1 && n > 0) return cuda_backend()->current_device();
  KILN_CHECK(index >= 0 && static_cast<size_t>(index) < n, who, ": device index ", index,
             " is out of range (", n, " CUDA devices",
             cuda_backend() ? "" : "; the CUDA backend is not loaded", ")");
  return static_cast<int>(index);
}

CudaHooks& require_hooks(const char* who) {
  KILN_CHECK(g_hooks && device_count() > 0, who,
             ": no CUDA device is available (is_available() is false)");
  return *g_hooks;
}
}  // namespace

void set_hooks(CudaHooks* hooks) { g_hooks = hooks; }
CudaHooks* hooks() {
  load_device_backends();
  return g_hooks;
}

size_t device_count() {
  DeviceBackend* b = cuda_backend();
  return b ? static_cast<size_t>(b->device_count()) : 0;
}

bool is_available() { return device_count() > 0; }

bool cudnn_is_available() { return false; }

void manual_seed(uint64_t seed) {
  if (is_available())
    default_generator(Device(kCUDA, static_cast<int>(current_device()))).manual_seed(seed);
}

void manual_seed_all(uint64_t seed) {
  for (size_t d = 0; d < device_count(); ++d)
    default_generator(Device(kCUDA, static_cast<int>(d))).manual_seed(seed);
}

void synchronize(int64_t device_index) {
  if (device_index == -1 && !is_available()) return;
  const int device = checked_device(device_index, "cuda::synchronize");  // a backend exists after
  cuda_backend()->synchronize(device);
}

int64_t current_device() { return checked_device(-1, "cuda::current_device"); }

void set_device(int64_t device_index) {
  const int device = checked_device(device_index, "cuda::set_device");
  cuda_backend()->set_current_device(device);
}

std::map<std::string, int64_t> memory_stats(int64_t device) {
  CudaHooks& h = require_hooks("cuda::memory_stats");
  return h.memory_stats(checked_device(device, "cuda::memory_stats"));
}

int64_t memory_allocated(int64_t device) {
  return memory_stats(device).at("allocated_bytes.all.current");
}
int64_t max_memory_allocated(int64_t device) {
  return memory_stats(device).at("allocated_bytes.all.peak");
}
int64_t memory_reserved(int64_t device) {
  return memory_stats(device).at("reserved_bytes.all.current");
}
int64_t max_memory_reserved(int64_t device) {
  return memory_stats(device).at("reserved_bytes.all.peak");
}

void reset_peak_memory_stats(int64_t device) {
  CudaHooks& h = require_hooks("cuda::reset_peak_memory_stats");
  h.reset_peak_memory_stats(checked_device(device, "cuda::reset_peak_memory_stats"));
}

void empty_cache() {
  if (is_available()) g_hooks->empty_cache();
}

}  // namespace kiln::cuda
