// The Kiln side of train_vs_torch: an MLP and a CNN written with kiln::nn, and the demo's own GPT
// (examples/gpt/model.cpp, compiled into the program).
#include "bench/libtorch/train_case.h"
#include "examples/gpt/model.h"
#include "kiln/kiln.h"
#include "kiln/nn/modules/conv.h"
#include "kiln/nn/nn.h"
#include "kiln/ops/conv.h"
#include "kiln/ops/nn.h"
#include "kiln/optim/optim.h"

namespace bench {
namespace {

namespace nn = kiln::nn;
namespace optim = kiln::optim;
using kiln::Tensor;

struct MlpImpl : nn::Module {
  MlpImpl()
      : fc1(register_module("fc1", nn::Linear(784, 512))),
        fc2(register_module("fc2", nn::Linear(512, 512))),
        fc3(register_module("fc3", nn::Linear(512, 10))) {}
  Tensor forward(const Tensor& x) { return fc3(fc2(fc1(x).relu()).relu()); }
  nn::Linear fc1, fc2, fc3;
};
KILN_MODULE(Mlp);

struct CnnImpl : nn::Module {
  CnnImpl()
      : conv1(register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)))),
        conv2(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)))),
        fc1(register_module("fc1", nn::Linear(64 * 7 * 7, 128))),
        fc2(register_module("fc2", nn::Linear(128, 10))) {}
  Tensor forward(const Tensor& x) {
    Tensor h = kiln::max_pool2d(conv1(x).relu(), {2, 2});
    h = kiln::max_pool2d(conv2(h).relu(), {2, 2});
    return fc2(fc1(h.flatten(1)).relu());
  }
  nn::Conv2d conv1, conv2;
  nn::Linear fc1, fc2;
};
KILN_MODULE(Cnn);

Tensor from_batch(const std::vector<float>& v, const std::vector<int64_t>& shape) {
  return kiln::tensor(v, kiln::kFloat32).reshape(shape).contiguous();
}
Tensor from_batch(const std::vector<int64_t>& v, const std::vector<int64_t>& shape) {
  return kiln::tensor(v, kiln::kInt64).reshape(shape).contiguous();
}

template <class Net, class Optimizer>
class KilnTrainer final : public Runner {
 public:
  KilnTrainer(Net net, std::unique_ptr<Optimizer> opt, Tensor x, Tensor y, bool clip)
      : net_(std::move(net)),
        opt_(std::move(opt)),
        x_(std::move(x)),
        y_(std::move(y)),
        clip_(clip) {}
  void run() override {
    opt_->zero_grad();
    Tensor logits = net_->forward(x_);
    loss_ = kiln::cross_entropy(logits.flatten(0, logits.dim() - 2), y_.flatten());
    loss_.backward();
    if (clip_) nn::utils::clip_grad_norm_(net_->parameters(), 1.0);
    opt_->step();
  }
  std::vector<float> result() override { return {loss_.item<float>()}; }

 private:
  Net net_;
  std::unique_ptr<Optimizer> opt_;
  Tensor x_, y_, loss_;
  bool clip_;
};

template <class Net, class Optimizer, class Options>
std::unique_ptr<Runner> trainer(Net net, const Options& options, Tensor x, Tensor y,
                                bool clip = false) {
  auto opt = std::make_unique<Optimizer>(net->parameters(), options);
  return std::make_unique<KilnTrainer<Net, Optimizer>>(std::move(net), std::move(opt), std::move(x),
                                                       std::move(y), clip);
}

gpt::Config demo_config() {
  gpt::Config c;
  c.vocab_size = GptShape::vocab;
  c.block_size = GptShape::block;
  c.n_layer = GptShape::layers;
  c.n_head = GptShape::heads;
  c.n_embd = GptShape::embd;
  return c;
}

}  // namespace

std::unique_ptr<Runner> make_kiln_trainer(Model m, const TrainBatch& b) {
  Tensor y = from_batch(b.targets, b.target_shape);
  switch (m) {
    case Model::Mlp:
      return trainer<Mlp, optim::SGD>(Mlp(), optim::SGDOptions(0.01).momentum(0.9),
                                      from_batch(b.inputs, b.input_shape), y);
    case Model::Cnn:
      return trainer<Cnn, optim::Adam>(Cnn(), optim::AdamOptions(1e-3),
                                       from_batch(b.inputs, b.input_shape), y);
    case Model::Gpt:
      return trainer<gpt::GPT, optim::AdamW>(gpt::GPT(demo_config()),
                                             optim::AdamWOptions(3e-3).weight_decay(0.01),
                                             from_batch(b.tokens, b.input_shape), y,
                                             /*clip=*/true);
  }
  return nullptr;
}

}  // namespace bench
