// Pinned host memory and non-blocking copies on a GPU, the pinned allocator's reuse rule, and
// the errors without a GPU (which run everywhere).
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "kiln/backend/cuda/host_allocator.h"
#include "tests/cuda/cuda_test_util.h"

namespace kiln {
namespace {

TEST(CudaPinnedMemory, WithoutAGpuIsAClearError) {
  if (cuda::is_available()) GTEST_SKIP() << "a CUDA device is present";
  const Tensor x = ones({4});
  EXPECT_TRUE(testing::has(testing::error_of([&] { x.pin_memory(); }),
                           "pin_memory: pinned memory needs a device backend with a device"));
  EXPECT_TRUE(testing::has(testing::error_of([&] { x.pin_memory(Device(kCUDA)); }),
                           "pin_memory: no CUDA device is available"));
}

TEST(CudaPinnedMemory, NonBlockingCopiesBothWaysKeepTheValues) {
  REQUIRE_GPU();
  manual_seed(3);
  const Tensor x = randn({1 << 20});
  const Tensor pinned = x.pin_memory();
  ASSERT_TRUE(pinned.is_pinned());
  EXPECT_TRUE(equal(pinned, x));
  const Tensor on_gpu = pinned.to(Device(kCUDA), /*non_blocking=*/true);
  const Tensor twice = on_gpu * 2;
  // To the host without waiting, into pinned memory; reading it waits for the copy.
  const Tensor back = twice.to(Device(kCPU), /*non_blocking=*/true);
  EXPECT_TRUE(back.is_pinned());
  EXPECT_TRUE(equal(back, x * 2));
  // Into a pinned tensor given, and from pageable memory (an ordinary copy).
  Tensor into = empty({1 << 20}, TensorOptions().pinned_memory(true));
  into.copy_(on_gpu, /*non_blocking=*/true);
  EXPECT_TRUE(equal(into, x));
  EXPECT_TRUE(equal(x.to(Device(kCUDA), /*non_blocking=*/true).cpu(), x));
  // A DataLoader pins its batches.
  auto loader = data::make_data_loader<data::samplers::SequentialSampler>(
      data::datasets::TensorPairDataset(x.view({-1, 16}), x.view({-1, 16}).sum(1))
          .map(data::transforms::Stack<>()),
      data::DataLoaderOptions(64).pin_memory(true).workers(2));
  int batches = 0;
  for (auto& batch : *loader) {
    EXPECT_TRUE(batch.data.is_pinned() && batch.target.is_pinned());
    // (Sums of 16 in another order: rounding differs, near zero too.)
    EXPECT_TRUE(
        allclose(batch.data.to(Device(kCUDA), true).sum(1).cpu(), batch.target, 1e-4, 1e-4));
    if (++batches == 3) break;
  }
}

std::atomic<bool> g_release{false};
void CUDART_CB hold_stream(void*) {
  while (!g_release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST(CudaPinnedMemory, ABlockIsReusedOnlyAfterItsCopyCompletes) {
  REQUIRE_GPU();
  cuda::HostAllocator& host = cuda::host_allocator();
  host.empty_cache();
  Tensor gpu = empty({1 << 18}, TensorOptions().device(kCUDA));
  auto stream = static_cast<cudaStream_t>(cuda::current_stream().handle());
  g_release = false;
  ASSERT_EQ(cudaLaunchHostFunc(stream, hold_stream, nullptr), cudaSuccess);  // the stream waits
  const void* first = nullptr;
  {
    Tensor pinned = randn({1 << 18}).pin_memory();
    first = pinned.data_ptr();
    gpu.copy_(pinned, /*non_blocking=*/true);  // queued behind the held stream
  }
  {
    Tensor again = empty({1 << 18}, TensorOptions().pinned_memory(true));
    EXPECT_NE(again.data_ptr(), first) << "a block was handed out while its copy was queued";
  }
  g_release = true;
  cuda::synchronize();
  Tensor third = empty({1 << 18}, TensorOptions().pinned_memory(true));
  EXPECT_TRUE(third.data_ptr() == first || host.cached_blocks() > 0)
      << "blocks whose copies completed are reused";
}

}  // namespace
}  // namespace kiln
