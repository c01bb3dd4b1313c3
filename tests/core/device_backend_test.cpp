// The core's handling of devices other than the CPU, through the kilntest backend
// (tests/device_backend): factories, copies, kernel choice, the CPU fallback, autograd and
// optimizers on a device.
#include <gtest/gtest.h>

#include <cstdlib>

#include "kiln/core/cpu_fallback.h"
#include "kiln/core/device_backend.h"
#include "kiln/kiln.h"
#include "tests/device_backend/kilntest_backend.h"
#include "tests/ops/op_test_util.h"

namespace kiln {
namespace {

class DeviceBackendTest : public ::testing::Test {
 protected:
  // Before any fixture exists: the members below name the backend's device type.
  static void SetUpTestSuite() {
    if (!device_backend(kPrivateUse1)) load_device_backend(testing::test_backend_path());
  }
  void SetUp() override { ASSERT_NE(device_backend(kPrivateUse1), nullptr); }
  const Device dev{"kilntest:0"};
  const Device dev1{"kilntest:1"};
};

Tensor iota(std::vector<int64_t> sizes, ScalarType dt = kFloat32) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return arange(n).to(dt).reshape(sizes);
}

TEST_F(DeviceBackendTest, NamesAndResolvesDevices) {
  EXPECT_EQ(device_type_name(kPrivateUse1), "kilntest");
  EXPECT_EQ(Device("kilntest"), Device("kilntest:0"));  // 0 is current
  EXPECT_NE(Device("kilntest"), Device("kilntest:1"));
  EXPECT_EQ(Device("kilntest").resolved().str(), "kilntest:0");
  Tensor t = zeros({2}, TensorOptions().device(Device("kilntest")));
  EXPECT_EQ(t.device().str(), "kilntest:0");  // tensors carry the index they were made on
  EXPECT_THROW(Device("kilnfoo"), Error);
}

TEST_F(DeviceBackendTest, FactoriesAllocateOnTheirOutputDevice) {
  const int64_t before = kilntest::counters().allocations[1];
  Tensor t = full({2, 3}, 7.0, TensorOptions().device(dev1));
  EXPECT_EQ(t.device(), dev1);
  EXPECT_EQ(kilntest::counters().allocations[1], before + 1);
  Tensor back = t.cpu();
  EXPECT_TRUE(back.is_cpu());
  EXPECT_TRUE(allclose(back, full({2, 3}, 7.0)));
  EXPECT_EQ(device_backend(kPrivateUse1)->current_device(), 0);  // the guard restored it
}

TEST_F(DeviceBackendTest, CopiesKeepValuesLayoutsAndDtypes) {
  Tensor x = iota({4, 5}).t();  // non-contiguous
  Tensor d = x.to(dev);
  EXPECT_EQ(d.device(), dev);
  EXPECT_TRUE(equal(d.cpu(), x));
  Tensor h = x.to(dev, kFloat64).to(Device(kCPU));
  EXPECT_EQ(h.dtype(), kFloat64);
  EXPECT_TRUE(equal(h, x.to(kFloat64)));
  Tensor other = d.to(dev1);  // device to device
  EXPECT_EQ(other.device(), dev1);
  EXPECT_TRUE(equal(other.cpu(), x));
  Tensor dst = zeros({5, 4}, TensorOptions().device(dev));
  dst.copy_(iota({5, 4}));  // copy_ from the CPU into device memory
  EXPECT_TRUE(equal(dst.cpu(), iota({5, 4})));
}

TEST_F(DeviceBackendTest, MixedDevicesAreAClearError) {
  Tensor a = ones({3}), b = ones({3}, TensorOptions().device(dev));
  try {
    mul(a, b);
    FAIL() << "mixing devices must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mul: expected all tensors to be on the same device, "
                                         "but found cpu and kilntest:0"),
              std::string::npos)
        << e.what();
  }
  // A CPU scalar joins a device tensor, as in PyTorch.
  EXPECT_TRUE(allclose(mul(b, scalar_tensor(3.0)).cpu(), full({3}, 3.0)));
}

TEST_F(DeviceBackendTest, NativeKernelsRunAndOthersFallBack) {
  Tensor a = iota({3}).to(dev), b = ones({3}).to(dev);
  const int64_t adds = kilntest::counters().native_adds;
  Tensor s = add(a, b);
  EXPECT_EQ(kilntest::counters().native_adds, adds + 1);
  Tensor p = mul(a, b);  // no kilntest kernel: the CPU fallback
  EXPECT_EQ(p.device(), dev);
  EXPECT_TRUE(equal(s.cpu(), iota({3}) + 1));
  EXPECT_TRUE(equal(p.cpu(), iota({3})));
  auto ops = cpu_fallback_ops();
  EXPECT_NE(std::find(ops.begin(), ops.end(), "mul on kilntest"), ops.end());
  a.add_(b);  // the in-place variant gets the native kernel too
  EXPECT_EQ(kilntest::counters().native_adds, adds + 2);
}

TEST_F(DeviceBackendTest, FallbackKeepsAliasingInPlaceAndDataDependentOps) {
  Tensor x = iota({4, 4}).to(dev);
  Tensor row = x.narrow(0, 1, 1);
  row.mul_(-1);  // in place on a view: the base sees it
  Tensor expect = iota({4, 4});
  expect.narrow(0, 1, 1).mul_(-1);
  EXPECT_TRUE(equal(x.cpu(), expect));
  Tensor nz = nonzero(gt(x, 10.0));  // output sizes depend on the data
  EXPECT_EQ(nz.device(), dev);
  EXPECT_TRUE(equal(nz.cpu(), nonzero(gt(expect, 10.0))));
  Tensor m = x.matmul(x.t());
  EXPECT_TRUE(allclose(m.cpu(), expect.matmul(expect.t())));
}

TEST_F(DeviceBackendTest, GradientsFlowBackToEachInputsDevice) {
  Tensor x = iota({2, 3}).requires_grad_(true);  // on the CPU
  Tensor w = ones({3}, TensorOptions().device(dev)).requires_grad_(true);
  Tensor y = (x.to(dev) * w).pow(2).sum();
  y.backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(x.grad().is_cpu());
  EXPECT_TRUE(allclose(x.grad(), 2 * iota({2, 3})));
  EXPECT_EQ(w.grad().device(), dev);
  Tensor xv = iota({2, 3});
  EXPECT_TRUE(allclose(w.grad().cpu(), (2 * xv * xv).sum(0)));
}

// sdpa on a device picks the math backend: the flash kernel is the CPU's.
TEST_F(DeviceBackendTest, AttentionOnADeviceTakesTheMathBackend) {
  manual_seed(13);
  Tensor q = randn({2, 3, 5, 4}), k = randn({2, 3, 6, 4}), v = randn({2, 3, 6, 4});
  Tensor y = scaled_dot_product_attention(q.to(dev), k.to(dev), v.to(dev));
  EXPECT_EQ(y.device(), dev);
  EXPECT_TRUE(allclose(y.cpu(), scaled_dot_product_attention(q, k, v), 1e-5, 1e-6));
  const auto ops = cpu_fallback_ops();
  EXPECT_EQ(
      std::find(ops.begin(), ops.end(), "_scaled_dot_product_flash_attention_for_cpu on kilntest"),
      ops.end());
}

// A multi-output op whose other outputs get no gradient (rms_norm's rstd) sees zeros made on
// their device, not the CPU's.
TEST_F(DeviceBackendTest, MissingGradientsOfMultiOutputOpsAreZerosOnTheirDevice) {
  auto grad_of = [](Device where) {
    Tensor x = (iota({3, 4}) * 0.3 - 1).to(where).requires_grad_(true);
    rms_norm(x, {4}, Tensor(), 1e-5).sum().backward();
    return x.grad();
  };
  Tensor on_device = grad_of(dev);
  EXPECT_EQ(on_device.device(), dev);
  EXPECT_TRUE(allclose(on_device.cpu(), grad_of(Device(kCPU)), 1e-6, 1e-6));
}

// Adam and AdamW update dense device parameters with device ops (optim/fused.h,
// runs_on_device), every variant as the CPU's fused loop does.
TEST_F(DeviceBackendTest, OptimizersUpdateParametersAndStateOnTheirDevice) {
  auto run = [](Device where, int variant) {
    Tensor p = iota({5}).to(where).requires_grad_(true);
    std::unique_ptr<optim::Optimizer> opt;
    if (variant == 0)
      opt = std::make_unique<optim::Adam>(std::vector<Tensor>{p}, optim::AdamOptions(0.1));
    if (variant == 1)
      opt = std::make_unique<optim::Adam>(std::vector<Tensor>{p},
                                          optim::AdamOptions(0.1).weight_decay(0.1).amsgrad(true));
    if (variant == 2)
      opt = std::make_unique<optim::AdamW>(
          std::vector<Tensor>{p}, optim::AdamWOptions(0.1).weight_decay(0.3).maximize(true));
    for (int step = 0; step < 3; ++step) {
      opt->zero_grad();
      ((p - 2) * (p - 2)).sum().backward();
      opt->step();
    }
    return p.detach();
  };
  for (int variant : {0, 1, 2}) {
    SCOPED_TRACE(variant);
    Tensor on_device = run(dev, variant), on_cpu = run(Device(kCPU), variant);
    EXPECT_EQ(on_device.device(), dev);
    EXPECT_TRUE(allclose(on_device.cpu(), on_cpu, 1e-5, 1e-6)) << on_device.cpu() << on_cpu;
    EXPECT_FALSE(allclose(on_cpu, iota({5})));  // it moved
  }
}

TEST_F(DeviceBackendTest, LbfgsSearchesOnTheHostAndUpdatesOnTheDevice) {
  auto run = [](Device where) {
    Tensor p = (iota({4}) - 1.5).to(where).requires_grad_(true);
    optim::LBFGS opt({p}, optim::LBFGSOptions(0.5));
    for (int step = 0; step < 3; ++step)
      opt.step([&] {
        opt.zero_grad();
        Tensor loss = (p * p).sum();
        loss.backward();
        return loss;
      });
    return p.detach();
  };
  Tensor on_device = run(dev), on_cpu = run(Device(kCPU));
  EXPECT_EQ(on_device.device(), dev);
  EXPECT_TRUE(allclose(on_device.cpu(), on_cpu));
  EXPECT_LT(on_cpu.abs().max().item<double>(), 1.0);  // it moved toward the minimum at 0
}

TEST_F(DeviceBackendTest, RandomOpsOnADeviceFollowTheSeed) {
  manual_seed(5);
  Tensor a = randn({8}, TensorOptions().device(dev));
  manual_seed(5);
  Tensor b = randn({8});
  EXPECT_TRUE(equal(a.cpu(), b));
}

TEST_F(DeviceBackendTest, DefaultDeviceSendsFactoriesThere) {
  DeviceGuard guard(dev1);
  Tensor t = ones({2});
  EXPECT_EQ(t.device(), dev1);
}

// Run by the ctest entries device_backend.autoload(_off), which set the environment.
TEST_F(DeviceBackendTest, PinnedMemoryComesFromTheBackendsHostAllocator) {
  const int64_t before = kilntest::counters().pinned_allocations;
  Tensor x = iota({3, 4}).t();
  EXPECT_FALSE(x.is_pinned());
  Tensor p = x.pin_memory(dev);
  EXPECT_EQ(kilntest::counters().pinned_allocations, before + 1);
  EXPECT_TRUE(p.is_pinned());
  EXPECT_TRUE(p.is_cpu());
  EXPECT_TRUE(p.is_contiguous());
  EXPECT_TRUE(equal(p, x));
  EXPECT_TRUE(p.pin_memory(dev).is_same(p));  // pinned already: itself
  EXPECT_TRUE(p.view({12}).is_pinned());      // views share the pinned storage
  EXPECT_FALSE(p.clone().is_pinned());
  // Factories with pinned_memory(true) allocate there too; a device tensor cannot be pinned.
  // (From the current accelerator's backend: this one, or CUDA's where a GPU is present.)
  EXPECT_TRUE(empty({5}, TensorOptions().pinned_memory(true)).is_pinned());
  Tensor z = zeros({2, 2}, TensorOptions(kInt64).pinned_memory(true));
  EXPECT_TRUE(z.is_pinned());
  EXPECT_EQ(z.sum().item<int64_t>(), 0);
  EXPECT_NE(testing::error_message([&] {
              p.to(dev).pin_memory(dev);
            }).find("pin_memory: only dense CPU tensors can be pinned, got a tensor on kilntest:0"),
            std::string::npos);
  // Copies through pinned memory to the device and back keep the values (a backend without
  // asynchronous copies makes non_blocking copies ordinary ones).
  Tensor on_dev = p.to(dev, /*non_blocking=*/true);
  Tensor back = on_dev.to(Device(kCPU), /*non_blocking=*/true);
  EXPECT_TRUE(back.is_pinned()) << "a non-blocking copy to the host lands in pinned memory";
  EXPECT_TRUE(equal(back, x));
  Tensor into = empty({4, 3});
  into.copy_(on_dev, /*non_blocking=*/true);
  EXPECT_TRUE(equal(into, x));
}

TEST_F(DeviceBackendTest, DataLoaderPinsItsBatches) {
  const Tensor x = iota({12, 2});
  for (size_t workers : {0, 2}) {
    auto loader = data::make_data_loader<data::samplers::SequentialSampler>(
        data::datasets::TensorPairDataset(x, x.sum(1)).map(data::transforms::Stack<>()),
        data::DataLoaderOptions(4).workers(workers).pin_memory(true));
    int64_t row = 0;
    for (auto& batch : *loader) {
      EXPECT_TRUE(batch.data.is_pinned() && batch.target.is_pinned()) << workers << " workers";
      EXPECT_TRUE(equal(batch.data, x.narrow(0, row, 4)));
      row += 4;
    }
    EXPECT_EQ(row, 12);
  }
}

TEST(PinnedMemory, WithoutABackendThatHasItIsAClearError) {
  const Tensor x = ones({2});
  EXPECT_NE(testing::error_message([&] {
              x.pin_memory(Device(kCPU));
            }).find("pin_memory: pinned memory belongs to a device backend, got device cpu"),
            std::string::npos);
  EXPECT_NE(
      testing::error_message([&] { empty({2}, TensorOptions().device(kCUDA).pinned_memory(true)); })
          .find("empty: pinned memory is host memory, so the tensor must be on the CPU, got "
                "device cuda"),
      std::string::npos);
}

TEST(DeviceBackendAutoload, FollowsTheEnvironment) {
  const char* expect = std::getenv("KILN_TEST_EXPECT_AUTOLOAD");
  if (!expect) GTEST_SKIP() << "run through ctest's device_backend.autoload entries";
  const bool loaded = device_backend(kPrivateUse1) != nullptr;
  EXPECT_EQ(loaded, std::string(expect) == "1");
  for (const auto& line : load_device_backends()) std::cout << line << "\n";
}

}  // namespace
}  // namespace kiln
