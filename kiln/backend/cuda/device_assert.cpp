#include "kiln/backend/cuda/device_assert.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <vector>

#include "kiln/backend/cuda/graphs.h"
#include "kiln/backend/cuda/runtime.h"
#include "kiln/core/error.h"

namespace kiln::cuda {

const char* const kDeviceAssertSource = R"cuda(
struct KilnDeviceAssert {
  unsigned int state;
  unsigned int count;
  int line;
  int dim;
  unsigned int block[3];
  unsigned int thread[3];
  unsigned long long launch;
  long long value;
  long long bound;
  char file[96];
  char message[96];
};

__device__ __noinline__ void kiln_device_assert_fail(KilnDeviceAssert* r, unsigned long long launch,
                                                     const char* file, int line, const char* message,
                                                     long long value, long long bound, int dim) {
  atomicAdd(&r->count, 1u);
  if (atomicCAS(&r->state, 0u, 1u) != 0u) return;  // the first failure is kept
  r->line = line;
  r->dim = dim;
  r->block[0] = blockIdx.x;
  r->block[1] = blockIdx.y;
  r->block[2] = blockIdx.z;
  r->thread[0] = threadIdx.x;
  r->thread[1] = threadIdx.y;
  r->thread[2] = threadIdx.z;
  r->launch = launch;
  r->value = value;
  r->bound = bound;
  int i = 0;
  for (; i < 95 && file[i]; ++i) r->file[i] = file[i];
  r->file[i] = 0;
  for (i = 0; i < 95 && message[i]; ++i) r->message[i] = message[i];
  r->message[i] = 0;
  __threadfence_system();
  atomicExch(&r->state, 2u);
}

#define KILN_DEVICE_CHECK(cond, record, launch, message, value, bound, dim)                    \
  ((cond) ? true                                                                              \
          : (kiln_device_assert_fail(record, launch, __FILE__, __LINE__, message,              \
                                     static_cast<long long>(value), static_cast<long long>(bound), \
                                     dim),                                                    \
             false))
)cuda";

namespace {

constexpr size_t kLaunchesKept = 4096;

struct Launch {
  unsigned long long id = 0;
  std::string op, kernel;
};

struct Asserts {
  std::mutex mu;
  std::vector<DeviceAssertRecord*> records;  // per device, mapped host memory
  std::vector<Launch> launches = std::vector<Launch>(kLaunchesKept);
  unsigned long long next = 1;
};

Asserts& asserts() {
  static Asserts* a = new Asserts();  // kernels may write records until the process exits
  return *a;
}

// The device's record (host and device address are one under unified addressing).
DeviceAssertRecord* record_for(Asserts& a, int dev) {
  if (a.records.size() <= static_cast<size_t>(dev)) a.records.resize(dev + 1, nullptr);
  if (!a.records[dev]) {
    void* p = nullptr;
    detail::check(
        cudaHostAlloc(&p, sizeof(DeviceAssertRecord), cudaHostAllocMapped | cudaHostAllocPortable),
        "cuda: allocating the device-side assertion record");
    std::memset(p, 0, sizeof(DeviceAssertRecord));
    a.records[dev] = static_cast<DeviceAssertRecord*>(p);
  }
  return a.records[dev];
}

}  // namespace

AssertingLaunch asserting_launch(int dev, const std::string& op, const std::string& kernel) {
  Asserts& a = asserts();
  std::lock_guard<std::mutex> lock(a.mu);
  const unsigned long long id = a.next++;
  Launch& l = a.launches[id % kLaunchesKept];
  l.id = id;
  l.op = op;
  l.kernel = kernel;
  return {record_for(a, dev), id};
}

std::string device_assert_message(const DeviceAssertRecord& r, const std::string& op,
                                  const std::string& kernel) {
  std::ostringstream os;
  os << op << ": CUDA device-side assertion failed in kernel " << kernel << " (" << r.file << ":"
     << r.line << ", block [" << r.block[0] << "," << r.block[1] << "," << r.block[2]
     << "], thread [" << r.thread[0] << "," << r.thread[1] << "," << r.thread[2] << "]): ";
  std::string msg(r.message, strnlen(r.message, sizeof(r.message)));
  for (const auto& [key, value] :
       {std::pair<const char*, std::string>{"{value}", std::to_string(r.value)},
        {"{bound}", std::to_string(r.bound)},
        {"{dim}", std::to_string(r.dim)}})
    if (size_t at = msg.find(key); at != std::string::npos) msg.replace(at, strlen(key), value);
  os << msg;
  if (r.count > 1) os << " (" << r.count << " checks failed; this is the first)";
  os << ". Elements that failed contribute zeros to the result; the device stays usable.";
  return os.str();
}

void check_device_asserts(int dev) {
  Asserts& a = asserts();
  std::string error;
  {
    std::lock_guard<std::mutex> lock(a.mu);
    if (a.records.size() <= static_cast<size_t>(dev) || !a.records[dev]) return;
    volatile DeviceAssertRecord* r = a.records[dev];
    if (r->state != 2) return;
    DeviceAssertRecord copy;
    std::memcpy(&copy, const_cast<DeviceAssertRecord*>(r), sizeof(copy));
    std::memset(const_cast<DeviceAssertRecord*>(r), 0, sizeof(copy));
    const Launch& l = a.launches[copy.launch % kLaunchesKept];
    const bool known = l.id == copy.launch;
    error =
        device_assert_message(copy, known ? l.op : "a CUDA op",
                              known ? l.kernel : "(launch " + std::to_string(copy.launch) + ")");
  }
  KILN_FAIL(error);
}

bool launch_blocking() {
  static const bool on = [] {
    const char* v = std::getenv("KILN_LAUNCH_BLOCKING");
    return v && std::strcmp(v, "0") != 0 && *v;
  }();
  return on;
}

void launch_kernel(const std::string& op, cudaKernel_t fn, dim3 grid, dim3 block, void** params,
                   size_t shared_bytes) {
  const cudaStream_t stream = detail::current_stream();
  const cudaError_t err = cudaLaunchKernel(reinterpret_cast<const void*>(fn), grid, block, params,
                                           shared_bytes, stream);
  if (err != cudaSuccess) detail::check(err, (op + ": launching its CUDA kernel").c_str());
  if (!launch_blocking() || capturing(stream)) return;  // a captured launch does not run now
  detail::check(cudaStreamSynchronize(stream),
                (op + ": its CUDA kernel (KILN_LAUNCH_BLOCKING=1)").c_str());
  check_device_asserts(detail::current_device());
}

}  // namespace kiln::cuda
