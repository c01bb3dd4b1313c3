#include <gtest/gtest.h>

#include "kiln/kiln.h"

namespace kiln {
namespace {

TEST(Dispatch, MetaModeProducesShapesWithoutData) {
  ModeGuard g(std::make_shared<MetaMode>());
  Tensor a = zeros({2, 3});
  Tensor b = ones({3});
  Tensor c = (a + b).exp().sum({1});
  EXPECT_TRUE(c.is_meta());
  EXPECT_EQ(c.sizes().vec(), (std::vector<int64_t>{2}));
  EXPECT_EQ(c.dtype(), kFloat32);
  EXPECT_THROW(c.data_ptr(), Error);
}

TEST(Dispatch, MetaTensorsWithSymbolicSizes) {
  ShapeEnv env;
  SymInt s0 = env.create_symbol(8);
  Tensor x = empty_meta({s0, 4});
  Tensor y = (x * x).sum({1});
  EXPECT_EQ(y.sym_size(0).str(), "s0");
  Tensor z = x.view({-1});
  EXPECT_EQ(z.sym_size(0).str(), "4*s0");
}

TEST(Dispatch, FactoriesWithSymbolicSizesMakeMetaTensorsWithoutGuards) {
  ShapeEnv env;
  SymInt s0 = env.create_symbol(8);
  Tensor z = zeros({s0, 3});
  EXPECT_TRUE(z.is_meta());
  EXPECT_EQ(z.sym_size(0).str(), "s0");
  EXPECT_TRUE(env.guards().empty());  // allocating at the hint would have specialised s0
}

TEST(Dispatch, DetachGoesThroughDispatch) {
  auto rec = std::make_shared<RecordingMode>();
  const Tensor x = randn({2}).requires_grad_(true);
  Tensor d;
  {
    ModeGuard guard(rec);
    d = x.detach();
  }
  ASSERT_EQ(rec->ops().size(), 1u);
  EXPECT_EQ(rec->ops()[0].name, "detach");
  EXPECT_FALSE(d.requires_grad());
  EXPECT_EQ(d.data_ptr(), x.data_ptr());
}

TEST(Dispatch, RecordingModeCapturesOpsAndAttributes) {
  auto rec = std::make_shared<RecordingMode>();
  Tensor x = ones({2, 3});
  {
    ModeGuard g(rec);
    Tensor y = (x * 2.0).sum({1}, true);
  }
  ASSERT_EQ(rec->ops().size(), 3u);  // full (the wrapped 2.0), mul, sum
  EXPECT_EQ(rec->ops()[1].name, "mul");
  EXPECT_EQ(rec->ops()[2].name, "sum");
  EXPECT_EQ(rec->ops()[2].attrs, "[1], True, None");
  EXPECT_EQ(SymIntArrayRef(rec->ops()[2].output_sizes[0]).vec(), (std::vector<int64_t>{2, 1}));
}

TEST(Dispatch, ModesNestAndUnwind) {
  auto outer = std::make_shared<RecordingMode>();
  {
    ModeGuard g1(outer);
    ModeGuard g2(std::make_shared<MetaMode>());
    Tensor y = zeros({2}) + 1.0;
    EXPECT_TRUE(y.is_meta());
  }
  EXPECT_TRUE(outer->ops().empty());  // the meta mode handled everything
  EXPECT_FALSE(zeros({2}).is_meta());
}

// A mode whose handle() enters another mode for the ops it runs (as function transforms nest
// modes): the inner guard must not drop the running mode or the modes above it.
class NestingMode final : public DispatchMode {
 public:
  std::vector<Tensor> handle(const OpDef& op, const std::vector<Tensor>& inputs,
                             const Attrs& attrs) override {
    ++calls;
    ModeGuard inner(recorder);
    return call_op(op, inputs, attrs);
  }
  int calls = 0;
  std::shared_ptr<RecordingMode> recorder = std::make_shared<RecordingMode>();
};

TEST(Dispatch, AGuardInsideAModeKeepsTheStack) {
  auto outer = std::make_shared<RecordingMode>();
  auto nesting = std::make_shared<NestingMode>();
  {
    ModeGuard g1(outer);
    ModeGuard g2(nesting);
    Tensor y = ones({3}) * 2.0;
    Tensor z = y + 1.0;  // after the inner guard of the first ops ended: still nesting's
    EXPECT_EQ(z.sum().item<float>(), 9.0f);
  }
  // ones, mul, add, sum and the wrapped numbers' tensors: every op went through the nesting
  // mode, its inner recorder and, below them, the outer mode, once each.
  const auto n = static_cast<size_t>(nesting->calls);
  EXPECT_GE(n, 4u);
  EXPECT_EQ(nesting->recorder->ops().size(), n);
  EXPECT_EQ(outer->ops().size(), n);
  Tensor plain = ones({2});  // every guard gone: no mode sees it
  EXPECT_EQ(outer->ops().size(), n);
  EXPECT_EQ(static_cast<size_t>(nesting->calls), n);
}

TEST(Dispatch, AutogradRecordsThroughTheSamePath) {
  auto rec = std::make_shared<RecordingMode>();
  Tensor x = ones({2}, requires_grad());
  {
    ModeGuard g(rec);
    Tensor y = x.exp();
    EXPECT_TRUE(y.requires_grad());
  }
  EXPECT_EQ(rec->ops().back().name, "exp");
}

TEST(Tensor, ViewsShareStorageAndVersionCounter) {
  Tensor x = zeros({4});
  Tensor v = x.view({2, 2});
  EXPECT_EQ(v.data_ptr(), x.data_ptr());
  v.fill_(3.0);
  EXPECT_EQ(x[3].item<float>(), 3.0f);
  EXPECT_EQ(x._version(), 1);
}

TEST(Tensor, StorageIsAligned) {
  Tensor x = empty({17}, kFloat32);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(x.data_ptr()) % 64, 0u);
}

TEST(Tensor, FromBlobWrapsCallerMemory) {
  float data[6] = {1, 2, 3, 4, 5, 6};
  Tensor t = from_blob(data, {2, 3}, kFloat32);
  EXPECT_EQ(t[1][2].item<float>(), 6.0f);
  data[0] = 10;
  EXPECT_EQ(t[0][0].item<float>(), 10.0f);
  bool deleted = false;
  {
    Tensor u = from_blob(
        data, {6}, [&](void*) { deleted = true; }, kFloat32);
  }
  EXPECT_TRUE(deleted);
}

TEST(Tensor, ItemAndSizeErrors) {
  Tensor x = zeros({2, 3});
  EXPECT_THROW(x.item<float>(), Error);
  try {
    x.size(2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected to be in range of [-2, 1], but got 2"),
              std::string::npos);
  }
  EXPECT_EQ(x.size(-1), 3);
  EXPECT_THROW(Tensor().dim(), Error);
}

TEST(Tensor, DeviceMismatchAndMissingCudaAreClearErrors) {
  EXPECT_THROW(zeros({2}, Device(kCUDA)), Error);
  DeviceGuard g{Device(kCPU)};
  EXPECT_TRUE(zeros({1}).is_cpu());
  EXPECT_EQ(Device("cuda:1").index(), 1);
  EXPECT_THROW(Device("tpu"), Error);
}

}  // namespace
}  // namespace kiln
