// The libtorch side of train_vs_torch: the three models written with libtorch's C++ frontend,
// layer by layer with the shapes of the Kiln side (the GPT mirrors examples/gpt/model.cpp).
#include <torch/torch.h>

#include "bench/libtorch/train_case.h"

namespace bench {
namespace {

namespace F = torch::nn::functional;

struct MlpImpl : torch::nn::Module {
  MlpImpl()
      : fc1(register_module("fc1", torch::nn::Linear(784, 512))),
        fc2(register_module("fc2", torch::nn::Linear(512, 512))),
        fc3(register_module("fc3", torch::nn::Linear(512, 10))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return fc3(torch::relu(fc2(torch::relu(fc1(x)))));
  }
  torch::nn::Linear fc1, fc2, fc3;
};
TORCH_MODULE(Mlp);

struct CnnImpl : torch::nn::Module {
  CnnImpl()
      : conv1(register_module("conv1",
                              torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3).padding(1)))),
        conv2(register_module("conv2",
                              torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3).padding(1)))),
        fc1(register_module("fc1", torch::nn::Linear(64 * 7 * 7, 128))),
        fc2(register_module("fc2", torch::nn::Linear(128, 10))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor h = torch::max_pool2d(torch::relu(conv1(x)), {2, 2});
    h = torch::max_pool2d(torch::relu(conv2(h)), {2, 2});
    return fc2(torch::relu(fc1(h.flatten(1))));
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Cnn);

struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(int64_t d, int64_t heads) : n_head(heads) {
    ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    qkv = register_module("qkv", torch::nn::Linear(d, 3 * d));
    proj = register_module("proj", torch::nn::Linear(d, d));
    ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    fc = register_module("fc", torch::nn::Linear(d, 4 * d));
    fc_out = register_module("fc_out", torch::nn::Linear(4 * d, d));
    drop = register_module("drop", torch::nn::Dropout(0.0));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
    auto heads = [&](const torch::Tensor& t) {
      return t.view({B, T, n_head, C / n_head}).transpose(1, 2);
    };
    std::vector<torch::Tensor> parts = qkv(ln1(x)).split(C, -1);
    torch::Tensor y =
        at::scaled_dot_product_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]), {}, 0.0,
                                         /*is_causal=*/true);
    torch::Tensor h = x + drop(proj(y.transpose(1, 2).reshape({B, T, C})));
    return h + drop(fc_out(torch::gelu(fc(ln2(h)))));
  }
  int64_t n_head;
  torch::nn::LayerNorm ln1 = nullptr, ln2 = nullptr;
  torch::nn::Linear qkv = nullptr, proj = nullptr, fc = nullptr, fc_out = nullptr;
  torch::nn::Dropout drop = nullptr;
};
TORCH_MODULE(Block);

struct GptImpl : torch::nn::Module {
  GptImpl() {
    const int64_t d = GptShape::embd;
    tok = register_module("tok", torch::nn::Embedding(GptShape::vocab, d));
    pos = register_module("pos", torch::nn::Embedding(GptShape::block, d));
    blocks = register_module("blocks", torch::nn::ModuleList());
    for (int64_t i = 0; i < GptShape::layers; ++i) blocks->push_back(Block(d, GptShape::heads));
    ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    for (auto& p : named_parameters()) {
      if (p.key().ends_with("bias"))
        torch::nn::init::zeros_(p.value());
      else if (p.value().dim() == 2)
        torch::nn::init::normal_(p.value(), 0, 0.02);
    }
  }
  torch::Tensor forward(const torch::Tensor& idx) {
    torch::Tensor x = tok(idx) + pos(torch::arange(idx.size(1), torch::kInt64));
    for (const auto& block : *blocks) x = block->as<BlockImpl>()->forward(x);
    return F::linear(ln_f(x), tok->weight);  // weight tying
  }
  torch::nn::Embedding tok = nullptr, pos = nullptr;
  torch::nn::ModuleList blocks = nullptr;
  torch::nn::LayerNorm ln_f = nullptr;
};
TORCH_MODULE(Gpt);

torch::Tensor from_batch(const std::vector<float>& v, std::vector<int64_t> shape) {
  return torch::from_blob(const_cast<float*>(v.data()), shape, torch::kFloat32).clone();
}
torch::Tensor from_batch(const std::vector<int64_t>& v, std::vector<int64_t> shape) {
  return torch::from_blob(const_cast<int64_t*>(v.data()), shape, torch::kInt64).clone();
}

template <class Net, class Optimizer>
class TorchTrainer final : public Runner {
 public:
  TorchTrainer(Net net, std::unique_ptr<Optimizer> opt, torch::Tensor x, torch::Tensor y, bool clip)
      : net_(std::move(net)),
        opt_(std::move(opt)),
        x_(std::move(x)),
        y_(std::move(y)),
        clip_(clip) {}
  void run() override {
    opt_->zero_grad();
    torch::Tensor logits = net_->forward(x_);
    loss_ = F::cross_entropy(logits.flatten(0, logits.dim() - 2), y_.flatten());
    loss_.backward();
    if (clip_) torch::nn::utils::clip_grad_norm_(net_->parameters(), 1.0);
    opt_->step();
  }
  std::vector<float> result() override { return {loss_.item<float>()}; }

 private:
  Net net_;
  std::unique_ptr<Optimizer> opt_;
  torch::Tensor x_, y_, loss_;
  bool clip_;
};

template <class Net, class Optimizer, class Options>
std::unique_ptr<Runner> trainer(Net net, const Options& options, torch::Tensor x, torch::Tensor y,
                                bool clip = false) {
  auto opt = std::make_unique<Optimizer>(net->parameters(), options);
  return std::make_unique<TorchTrainer<Net, Optimizer>>(std::move(net), std::move(opt),
                                                        std::move(x), std::move(y), clip);
}

}  // namespace

std::unique_ptr<Runner> make_torch_trainer(Model m, const TrainBatch& b) {
  torch::Tensor y = from_batch(b.targets, b.target_shape);
  switch (m) {
    case Model::Mlp:
      return trainer<Mlp, torch::optim::SGD>(Mlp(), torch::optim::SGDOptions(0.01).momentum(0.9),
                                             from_batch(b.inputs, b.input_shape), y);
    case Model::Cnn:
      return trainer<Cnn, torch::optim::Adam>(Cnn(), torch::optim::AdamOptions(1e-3),
                                              from_batch(b.inputs, b.input_shape), y);
    case Model::Gpt:
      return trainer<Gpt, torch::optim::AdamW>(
          Gpt(), torch::optim::AdamWOptions(3e-3).weight_decay(0.01),
          from_batch(b.tokens, b.input_shape), y, /*clip=*/true);
  }
  return nullptr;
}

}  // namespace bench
