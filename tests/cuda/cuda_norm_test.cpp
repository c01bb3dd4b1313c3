// layer_norm and rms_norm with their backward on a GPU, at a transformer's sizes, against the
// CPU (skipped with its reason where no CUDA device is present), and their kernels' sources.
#include "kiln/backend/cuda/norm.h"
#include "kiln/backend/cuda/nvrtc_program.h"
#include "tests/cuda/cuda_test_util.h"

namespace kiln {
namespace {

// Without a GPU: every kernel's source compiles with NVRTC.
TEST(CudaNormSource, EveryVariantCompiles) {
  using cuda::NormKernel;
  for (ScalarType dt : {kFloat64, kFloat32, kFloat16, kBFloat16})
    for (NormKernel k : {NormKernel::Forward, NormKernel::Backward, NormKernel::Columns}) {
      const std::string name = "kiln_test_norm_" + std::to_string(static_cast<int>(k)) + "_" +
                               std::string(dtype_name(dt));
      SCOPED_TRACE(name);
      std::string ptx;
      try {
        ptx = cuda::compile_to_ptx(cuda::norm_source(k, dt, name), name, "compute_90");
      } catch (const Error& e) {
        ADD_FAILURE() << e.what();
        continue;
      }
      EXPECT_NE(ptx.find(".entry " + name + "("), std::string::npos);
    }
  EXPECT_THROW(cuda::norm_source(NormKernel::Forward, kInt32, "k"), Error);
}

TEST(CudaNorm, LayerNormAndRmsNormMatchTheCpuWithGradients) {
  REQUIRE_GPU();
  manual_seed(9);
  for (ScalarType dt : {kFloat32, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    const double tol = dt == kFloat32 ? 2e-4 : 3e-2;
    for (bool rms : {false, true}) {
      SCOPED_TRACE(rms ? "rms_norm" : "layer_norm");
      Tensor x = (randn({512, 768}) * 3 + 1).to(dt), w = randn({768}).to(dt),
             b = randn({768}).to(dt), up = randn({512, 768}).to(dt);
      auto run = [&](Device d) {
        Tensor xd = x.to(d).requires_grad_(true), wd = w.to(d).requires_grad_(true),
               bd = b.to(d).requires_grad_(true);
        Tensor y = rms ? rms_norm(xd, {768}, wd, 1e-5) : layer_norm(xd, {768}, wd, bd, 1e-5);
        (y * up.to(d)).sum().backward();
        std::vector<Tensor> r = {y.detach().cpu(), xd.grad().cpu(), wd.grad().cpu()};
        if (!rms) r.push_back(bd.grad().cpu());
        return r;
      };
      const std::vector<Tensor> gpu = run(Device(kCUDA)), cpu = run(Device(kCPU));
      for (size_t i = 0; i < cpu.size(); ++i) {
        // Column sums over 512 rows: compare relative to their size.
        const double scale = std::max(1.0, cpu[i].to(kFloat64).abs().max().item<double>());
        EXPECT_LT((gpu[i].to(kFloat64) - cpu[i].to(kFloat64)).abs().max().item<double>(),
                  tol * scale)
            << "result " << i;
      }
    }
  }
  for (const char* op : {"layer_norm", "rms_norm", "layer_norm_backward", "rms_norm_backward"})
    EXPECT_FALSE(testing::fell_back(op)) << op << " fell back";
}

}  // namespace
}  // namespace kiln
