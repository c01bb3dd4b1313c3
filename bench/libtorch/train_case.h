#pragma once
// The models of train_vs_torch (issue 4) and the trainers both sides implement (train_kiln.cpp,
// train_torch.cpp). A trainer's run() is one training step on a fixed batch: zero_grad, forward,
// loss, backward, (GPT: gradient clipping to norm 1.0), optimizer step; result() is that step's
// loss. The two sides start from different random weights, so losses are shown, not compared.
#include <cstdint>
#include <memory>
#include <vector>

#include "bench/libtorch/timing.h"

namespace bench {

enum class Model {
  Mlp,  // 784-512-512-10 with ReLU, cross_entropy, SGD (lr 0.01, momentum 0.9)
  Cnn,  // conv 1->32 3x3 pad 1, relu, maxpool 2, conv 32->64 3x3 pad 1, relu, maxpool 2,
        // linear 64*7*7->128, relu, linear 128->10; cross_entropy, Adam (lr 1e-3)
  Gpt,  // the demo's GPT (examples/gpt/model.h), AdamW (lr 3e-3, weight decay 0.01)
};

// The demo's addition task: 12 tokens, 8 positions, 2 pre-norm blocks of 4 heads, 64 channels.
struct GptShape {
  static constexpr int64_t vocab = 12, block = 8, layers = 2, heads = 4, embd = 64;
};

// One fixed batch: float inputs (MLP, CNN) or int64 tokens (GPT) and int64 class targets.
struct TrainBatch {
  std::vector<int64_t> input_shape, target_shape;
  std::vector<float> inputs;
  std::vector<int64_t> tokens, targets;
};

std::unique_ptr<Runner> make_kiln_trainer(Model m, const TrainBatch& b);
std::unique_ptr<Runner> make_torch_trainer(Model m, const TrainBatch& b);

}  // namespace bench
