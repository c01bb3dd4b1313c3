#pragma once
// Device-side assertions: a kernel that finds a bad value (an index out of range, an invalid
// target) records the first failure (kernel source file and line, block, thread, the value and
// its bound) in a per-device record in mapped host memory, skips that element and returns. It
// does not trap, so the CUDA context stays usable. The next synchronisation with the host
// (cuda::synchronize, a copy to the host, item(), the CPU fallback) raises a kiln::Error naming
// the op and the kernel that launched it. KILN_LAUNCH_BLOCKING=1 synchronises after every
// launch, so the error comes from the op that failed.
//
// Kernels that check take two arguments after their own: the record (`KilnDeviceAssert*`) and
// the launch's id (`unsigned long long`), and use kDeviceAssertSource's KILN_DEVICE_CHECK.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace kiln::cuda {

// The record as the device writes it; kDeviceAssertSource declares the same layout.
struct DeviceAssertRecord {
  uint32_t state;  // 0: none; 1: being written; 2: written
  uint32_t count;  // failed checks since the record was last read
  int32_t line;
  int32_t dim;
  uint32_t block[3];
  uint32_t thread[3];
  uint64_t launch;
  int64_t value;
  int64_t bound;
  char file[96];
  char message[96];
};
static_assert(sizeof(DeviceAssertRecord) == 256, "kDeviceAssertSource declares this layout");

// CUDA C++ that kernels include: the record's struct and
//   KILN_DEVICE_CHECK(cond, record, launch, "message", value, bound, dim)
extern const char* const kDeviceAssertSource;

// What a launch that may fail a check needs: the device's record and an id naming the op and
// kernel in the error.
struct AssertingLaunch {
  DeviceAssertRecord* record;
  unsigned long long id;
};
AssertingLaunch asserting_launch(int dev, const std::string& op, const std::string& kernel);

// Raises the failure recorded on `dev` since the last check, if any, and clears it. Call after
// the work that may have failed is known to be complete (a synchronisation).
void check_device_asserts(int dev);

// The error's text for a record written by a launch of `kernel` for `op`.
std::string device_assert_message(const DeviceAssertRecord& r, const std::string& op,
                                  const std::string& kernel);

// KILN_LAUNCH_BLOCKING=1 (read once).
bool launch_blocking();

// Launches a generated kernel on the current stream for `op`; a failed launch is a kiln::Error
// naming the op. With KILN_LAUNCH_BLOCKING=1 it then waits for the kernel and raises its
// failures (a CUDA error or a device-side assertion) here.
void launch_kernel(const std::string& op, cudaKernel_t fn, dim3 grid, dim3 block, void** params,
                   size_t shared_bytes = 0);

}  // namespace kiln::cuda
