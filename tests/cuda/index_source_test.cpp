// The CUDA backend's index kernels (gather, embedding_backward, nll_loss) and device-side
// assertions, without a GPU: every source variant compiles with NVRTC, and a failure record is
// reported with the op, the kernel, where it failed and the values.
#include <gtest/gtest.h>

#include <cstring>

#include "kiln/backend/cuda/device_assert.h"
#include "kiln/backend/cuda/index.h"
#include "kiln/backend/cuda/nvrtc_program.h"
#include "kiln/core/error.h"
#include "tests/cuda/cuda_test_util.h"

namespace kiln {
namespace {

TEST(CudaIndexSource, EveryVariantCompiles) {
  int n = 0;
  for (ScalarType index : {kInt64, kInt32}) {
    for (int bytes : {1, 2, 4, 8}) {
      const std::string name =
          "kiln_test_gather_" + std::to_string(bytes) + "_" + std::string(dtype_name(index));
      testing::expect_ptx_compiles(cuda::gather_source(bytes, index, name), name), ++n;
    }
    for (int bytes : {1, 2, 4, 8, 16}) {
      const std::string name =
          "kiln_test_gather_rows_" + std::to_string(bytes) + "_" + std::string(dtype_name(index));
      testing::expect_ptx_compiles(cuda::gather_rows_source(bytes, index, name), name), ++n;
    }
    for (ScalarType dt : {kFloat32, kFloat64}) {
      const std::string name = "kiln_test_embedding_backward_" + std::string(dtype_name(dt));
      testing::expect_ptx_compiles(cuda::embedding_backward_source(dt, index, name), name), ++n;
    }
  }
  for (ScalarType x : {kFloat64, kFloat32, kFloat16, kBFloat16})
    for (ScalarType target : {kInt64, kInt32, kUInt8}) {
      const std::string name = "kiln_test_nll_loss_" + std::string(dtype_name(x)) + "_" +
                               std::string(dtype_name(target));
      testing::expect_ptx_compiles(cuda::nll_loss_source(x, target, name), name), ++n;
    }
  EXPECT_EQ(n, 8 + 10 + 4 + 12);
  EXPECT_THROW(cuda::gather_source(3, kInt64, "k"), Error);
  EXPECT_THROW(cuda::gather_source(4, kFloat32, "k"), Error);
  EXPECT_THROW(cuda::embedding_backward_source(kBFloat16, kInt64, "k"), Error);
  EXPECT_THROW(cuda::nll_loss_source(kInt32, kInt64, "k"), Error);
}

TEST(CudaDeviceAssert, TheMessageNamesTheOpKernelPlaceAndValues) {
  cuda::DeviceAssertRecord r{};
  r.state = 2;
  r.count = 3;
  r.line = 27;
  r.dim = 0;
  r.block[0] = 4;
  r.thread[0] = 17;
  r.value = 7;
  r.bound = 6;
  std::strcpy(r.file, "kiln_gather_4_int64");
  std::strcpy(r.message, "index {value} is out of bounds for dimension {dim} with size {bound}");
  const std::string m = cuda::device_assert_message(r, "index_select", "kiln_gather_4_int64");
  EXPECT_EQ(m,
            "index_select: CUDA device-side assertion failed in kernel kiln_gather_4_int64 "
            "(kiln_gather_4_int64:27, block [4,0,0], thread [17,0,0]): index 7 is out of bounds "
            "for dimension 0 with size 6 (3 checks failed; this is the first). Elements that "
            "failed contribute zeros to the result; the device stays usable.");
}

}  // namespace
}  // namespace kiln
