// The CUDA backend's index-tracking reductions and scans, without a GPU: every source variant
// (argmax / argmin and each scan, for every dtype they take) compiles with NVRTC to PTX that
// holds its entry.
#include <gtest/gtest.h>

#include "kiln/backend/cuda/nvrtc_program.h"
#include "kiln/backend/cuda/reduce_more.h"
#include "kiln/core/error.h"
#include "tests/cuda/cuda_test_util.h"

namespace kiln {
namespace {

using cuda::ScanKind;

const ScalarType kDtypes[] = {kFloat64, kFloat32, kFloat16, kBFloat16, kInt64,
                              kInt32,   kInt16,   kInt8,    kUInt8,    kBool};
const ScanKind kScans[] = {ScanKind::Sum, ScanKind::Prod, ScanKind::Max, ScanKind::Min};

TEST(CudaReduceMoreSource, SupportedDtypes) {
  for (ScalarType dt : kDtypes) {
    EXPECT_EQ(cuda::scan_supported(ScanKind::Sum, dt), dt != kBool) << dt;
    EXPECT_EQ(cuda::scan_supported(ScanKind::Prod, dt), dt != kBool) << dt;
    EXPECT_TRUE(cuda::scan_supported(ScanKind::Max, dt)) << dt;
    EXPECT_TRUE(cuda::scan_supported(ScanKind::Min, dt)) << dt;
  }
  EXPECT_THROW(cuda::scan_source(ScanKind::Sum, kBool, "k"), Error);
  EXPECT_NE(cuda::arg_reduce_kernel_name(true, kFloat32),
            cuda::arg_reduce_kernel_name(false, kFloat32));
}

TEST(CudaReduceMoreSource, EveryArgReductionCompiles) {
  for (bool max : {true, false}) {
    for (ScalarType dt : kDtypes) {
      const std::string name = cuda::arg_reduce_kernel_name(max, dt);
      testing::expect_ptx_compiles(cuda::arg_reduce_source(max, dt, name), name);
    }
  }
}

TEST(CudaReduceMoreSource, EveryScanCompiles) {
  int count = 0;
  for (ScanKind kind : kScans) {
    for (ScalarType dt : kDtypes) {
      if (!cuda::scan_supported(kind, dt)) continue;
      const std::string name = cuda::scan_kernel_name(kind, dt);
      testing::expect_ptx_compiles(cuda::scan_source(kind, dt, name), name);
      ++count;
    }
  }
  EXPECT_EQ(count, 9 + 9 + 10 + 10);
}

}  // namespace
}  // namespace kiln
