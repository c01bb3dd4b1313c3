// A transformer trained on the GPU: the demo's GPT (embeddings, layer norms, causal attention
// through the sdpa math path, GELU MLPs, cross-entropy, AdamW) takes the same steps as on the
// CPU, and no op of its training step takes the CPU fallback. Skips with its reason where no
// CUDA device is present.
#include "examples/gpt/model.h"
#include "tests/cuda/cuda_test_util.h"

namespace kiln {
namespace {

std::vector<double> train(Device device, int steps) {
  gpt::Config c;
  c.vocab_size = 50;
  c.block_size = 32;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 64;
  manual_seed(11);
  gpt::GPT model(c);
  model->to(device);
  optim::AdamW opt(model->parameters(), optim::AdamWOptions(1e-2).weight_decay(0.1));
  manual_seed(12);
  Tensor idx = randint(0, 50, {4, 32}).to(device), target = randint(0, 50, {4, 32}).to(device);
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    Tensor loss =
        nn::functional::cross_entropy(model->forward(idx).view({-1, 50}), target.view({-1}));
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

TEST(CudaTraining, TheDemoGptTrainsAsOnTheCpuWithoutTheFallback) {
  REQUIRE_GPU();
  const std::vector<double> cpu = train(Device(kCPU), 5);
  const std::vector<std::string> before = cpu_fallback_ops();
  const std::vector<double> gpu = train(Device(kCUDA), 5);
  ASSERT_EQ(gpu.size(), cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) EXPECT_NEAR(gpu[i], cpu[i], 2e-3) << "step " << i;
  EXPECT_LT(gpu.back(), gpu.front());  // it learns
  std::vector<std::string> fell_back;
  for (const std::string& op : cpu_fallback_ops())
    if (std::find(before.begin(), before.end(), op) == before.end()) fell_back.push_back(op);
  EXPECT_TRUE(fell_back.empty()) << ::testing::PrintToString(fell_back);
}

}  // namespace
}  // namespace kiln
