// The CUDA index kernels on a GPU (gather, index_select, embedding and its backward, nll_loss)
// against the CPU, and device-side assertions: a bad index raises a kiln::Error at the next
// synchronisation, naming the op and the kernel, and the device stays usable. Every test skips
// with its reason where no CUDA device is present.
#include <cstdlib>
#include <functional>

#include "tests/cuda/cuda_test_util.h"

namespace kiln {
namespace {

using testing::error_of;
using testing::has;

void expect_native(std::initializer_list<const char*> ops) {
  for (const char* op : ops) EXPECT_FALSE(testing::fell_back(op)) << op << " fell back";
}

bool launch_blocking() {
  const char* v = std::getenv("KILN_LAUNCH_BLOCKING");
  return v && *v && std::string(v) != "0";
}

TEST(CudaIndex, GatherIndexSelectAndEmbeddingMatchTheCpu) {
  REQUIRE_GPU();
  manual_seed(5);
  for (ScalarType dt : {kFloat32, kFloat64, kBFloat16, kInt64, kBool}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = (randn({7, 9, 5}) * 4).to(dt);
    Tensor xt = x.transpose(0, 2);  // [5, 9, 7], not contiguous
    Tensor g = x.cuda(), gt = g.transpose(0, 2);
    for (ScalarType it : {kInt64, kInt32}) {
      Tensor idx = randint(0, 9, {11}).to(it);
      EXPECT_TRUE(equal(index_select(g, 1, idx.cuda()).cpu(), index_select(x, 1, idx)));
      Tensor rows = idx % 7, every_other = rows.cuda().slice(0, 0, 11, 2);
      EXPECT_TRUE(equal(index_select(g, 0, rows.cuda()).cpu(), index_select(x, 0, rows)));
      EXPECT_TRUE(equal(index_select(g, 0, every_other).cpu(),
                        index_select(x, 0, rows.slice(0, 0, 11, 2))));
      EXPECT_TRUE(equal(index_select(gt, 2, idx.cuda() % 7).cpu(), index_select(xt, 2, idx % 7)));
      Tensor gi = randint(0, 9, {4, 6, 3}).to(it);
      EXPECT_TRUE(equal(gather(g, 1, gi.cuda()).cpu(), gather(x, 1, gi)));
      EXPECT_TRUE(equal(gather(gt, 1, gi.cuda()).cpu(), gather(xt, 1, gi)));
    }
    if (!is_floating_point(dt)) continue;
    Tensor w = x.reshape({63, 5}), ids = randint(0, 63, {3, 8});
    EXPECT_TRUE(equal(embedding(w.cuda(), ids.cuda()).cpu(), embedding(w, ids)));
    EXPECT_TRUE(equal(embedding(w.t().cuda().t(), ids.to(kInt32).cuda()).cpu(), embedding(w, ids)));
  }
  expect_native({"gather", "index_select", "embedding"});
}

TEST(CudaIndex, EmbeddingGradientAndNllLossMatchTheCpu) {
  REQUIRE_GPU();
  manual_seed(6);
  for (ScalarType dt : {kFloat32, kFloat64, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    const double tol = dt == kBFloat16 ? 2e-2 : dt == kFloat32 ? 1e-5 : 1e-12;
    Tensor w = randn({50, 16}).to(dt), ids = randint(0, 50, {4, 30});
    for (int64_t pad : {int64_t{-1}, int64_t{3}}) {
      Tensor wc = w.clone().requires_grad_(true), wg = w.cuda().requires_grad_(true);
      Tensor up = randn({4, 30, 16}).to(dt);
      (embedding(wc, ids, pad) * up).sum().backward();
      (embedding(wg, ids.cuda(), pad) * up.cuda()).sum().backward();
      EXPECT_TRUE(allclose(wg.grad().cpu().to(kFloat64), wc.grad().to(kFloat64), tol, tol));
    }
    Tensor logits = randn({64, 10}).to(dt), target = randint(0, 10, {64});
    target.index_put_({tensor(std::vector<int64_t>{3, 9})}, tensor(int64_t{-100}));
    Tensor cw = rand({10}).to(dt) + 0.5;
    for (Reduction reduction : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
      SCOPED_TRACE(static_cast<int>(reduction));
      auto opts = nn::functional::CrossEntropyFuncOptions().reduction(reduction).weight(cw);
      Tensor lc = logits.clone().requires_grad_(true), lg = logits.cuda().requires_grad_(true);
      Tensor a = nn::functional::cross_entropy(lc, target, opts);
      opts.weight(cw.cuda());
      Tensor b = nn::functional::cross_entropy(lg, target.cuda(), opts);
      EXPECT_TRUE(allclose(b.cpu().to(kFloat64), a.to(kFloat64), tol, tol));
      a.sum().backward();
      b.sum().backward();
      EXPECT_TRUE(allclose(lg.grad().cpu().to(kFloat64), lc.grad().to(kFloat64), tol, tol));
    }
  }
  expect_native({"embedding", "embedding_backward", "nll_loss", "log_softmax"});
}

// An index out of range: the call returns (the kernel runs asynchronously), the next
// synchronisation raises an error naming the op, the kernel, the block and thread and the
// value; then the device works as before. With KILN_LAUNCH_BLOCKING=1 the call itself raises.
// index_select along dim 0 moves whole rows (kiln_gather_rows_*); gather takes the general
// kernel (kiln_gather_*).
TEST(CudaDeviceAssert, AnIndexOutOfRangeIsRaisedAtTheNextSynchronisation) {
  REQUIRE_GPU();
  Tensor x = arange(24, TensorOptions(kFloat32)).view({6, 4}).cuda();
  Tensor bad = tensor(std::vector<int64_t>{1, 7, 2}).cuda();
  Tensor bad_cols = tensor(std::vector<int64_t>{0, 3, 4, 1, 9, 2}).view({2, 3}).cuda();
  const struct {
    std::function<Tensor()> call;
    std::vector<std::string> parts;
  } cases[] = {
      {[&] { return index_select(x, 0, bad); },
       {"index_select: CUDA device-side assertion failed in kernel kiln_gather_rows_16_int64",
        "index 7 is out of bounds for dimension 0 with size 6", "kiln_gather_rows_16_int64.cu:"}},
      {[&] { return gather(x, 1, bad_cols); },
       {"gather: CUDA device-side assertion failed in kernel kiln_gather_4_int64",
        "is out of bounds for dimension 1 with size 4",
        "kiln_gather_4_int64.cu:", "(2 checks failed; this is the first)"}},
  };
  for (const auto& c : cases) {
    Tensor y;
    std::string at_call = error_of([&] { y = c.call(); });
    std::string at_sync = launch_blocking() ? at_call : error_of([&] { cuda::synchronize(); });
    if (launch_blocking())
      EXPECT_FALSE(at_call.empty());
    else
      EXPECT_EQ(at_call, "");
    for (const std::string& part : c.parts) EXPECT_TRUE(has(at_sync, part)) << at_sync;
    EXPECT_TRUE(has(at_sync, "block [") && has(at_sync, "thread [")) << at_sync;
    // Reported once; the device stays usable.
    EXPECT_EQ(error_of([&] { cuda::synchronize(); }), "");
  }
  Tensor ok = index_select(x, 0, tensor(std::vector<int64_t>{5, 0}).cuda());
  EXPECT_TRUE(equal(ok.cpu(), index_select(x.cpu(), 0, tensor(std::vector<int64_t>{5, 0}))));
  EXPECT_DOUBLE_EQ((x * 2).sum().item<double>(), 552.0);
}

TEST(CudaDeviceAssert, AnInvalidTargetIsRaisedByTheCopyToTheHost) {
  REQUIRE_GPU();
  Tensor logits = randn({4, 5}).cuda(), target = tensor(std::vector<int64_t>{0, 5, 1, 2}).cuda();
  std::string e = error_of([&] {
    Tensor loss = nn::functional::cross_entropy(logits, target);
    loss.item<float>();  // a copy to the host: a synchronisation
  });
  EXPECT_TRUE(
      has(e, "nll_loss: CUDA device-side assertion failed in kernel kiln_nll_loss_float32_int64"))
      << e;
  EXPECT_TRUE(has(e, "Target 5 is out of bounds (classes: 5)")) << e;
  Tensor fine = nn::functional::cross_entropy(logits, target.clamp_max(4));
  EXPECT_TRUE(std::isfinite(fine.item<float>()));
}

TEST(CudaDeviceAssert, EveryFailedElementIsCountedAndTheFirstReported) {
  REQUIRE_GPU();
  Tensor w = randn({10, 8}).cuda();
  Tensor ids = full({1000}, int64_t{12}).cuda();
  std::string e = error_of([&] { embedding(w, ids).cpu(); });
  // Rows of 8 float32 move as two 16-byte chunks, each checked.
  EXPECT_TRUE(has(e, "embedding: CUDA device-side assertion failed")) << e;
  EXPECT_TRUE(has(e, "(2000 checks failed; this is the first)")) << e;
}

}  // namespace
}  // namespace kiln
