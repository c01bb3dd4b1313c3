// A ResNet basic block (Conv2d + BatchNorm2d, `out += residual`, a downsampling shortcut in a
// Sequential) trained for a few steps to separate two texture classes.
#include <torch/torch.h>

struct BasicBlockImpl : torch::nn::Module {
  static const int expansion = 1;
  BasicBlockImpl(int64_t inplanes, int64_t planes, int64_t stride = 1,
                 torch::nn::Sequential downsample = nullptr)
      : conv1(torch::nn::Conv2dOptions(inplanes, planes, 3).stride(stride).padding(1).bias(false)),
        bn1(planes),
        conv2(torch::nn::Conv2dOptions(planes, planes, 3).stride(1).padding(1).bias(false)),
        bn2(planes),
        downsample(downsample) {
    register_module("conv1", conv1);
    register_module("bn1", bn1);
    register_module("conv2", conv2);
    register_module("bn2", bn2);
    if (downsample) register_module("downsample", downsample);
  }

  torch::Tensor forward(torch::Tensor x) {
    at::Tensor residual(x.clone());
    x = conv1->forward(x);
    x = bn1->forward(x);
    x = torch::relu(x);
    x = conv2->forward(x);
    x = bn2->forward(x);
    if (!downsample.is_empty()) residual = downsample->forward(residual);
    x += residual;
    x = torch::relu(x);
    return x;
  }

  torch::nn::Conv2d conv1;
  torch::nn::BatchNorm2d bn1;
  torch::nn::Conv2d conv2;
  torch::nn::BatchNorm2d bn2;
  torch::nn::Sequential downsample;
};
TORCH_MODULE(BasicBlock);

int main() {
  torch::manual_seed(5);
  torch::nn::Sequential shortcut(
      torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 1).stride(2).bias(false)),
      torch::nn::BatchNorm2d(8));
  BasicBlock block(3, 8, 2, shortcut);
  torch::nn::Linear fc(8, 2);

  // Class 0: smooth images; class 1: checkerboard noise.
  torch::Tensor smooth = torch::ones({16, 3, 8, 8}) * torch::rand({16, 3, 1, 1});
  torch::Tensor rough = torch::randn({16, 3, 8, 8});
  torch::Tensor images = torch::cat({smooth, rough});
  torch::Tensor targets =
      torch::cat({torch::zeros({16}, torch::kLong), torch::ones({16}, torch::kLong)});

  std::vector<torch::Tensor> params = block->parameters();
  for (const auto& p : fc->parameters()) params.push_back(p);
  torch::optim::SGD optimizer(params, torch::optim::SGDOptions(0.05).momentum(0.9));

  float first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    optimizer.zero_grad();
    torch::Tensor features = block->forward(images);
    TORCH_CHECK(features.sizes() == torch::IntArrayRef({32, 8, 4, 4}), "block output ",
                features.sizes());
    torch::Tensor logits = fc->forward(torch::adaptive_avg_pool2d(features, {1, 1}).flatten(1));
    torch::Tensor loss = torch::nn::functional::cross_entropy(logits, targets);
    loss.backward();
    optimizer.step();
    if (step == 0) first = loss.item<float>();
    last = loss.item<float>();
  }
  std::cout << "loss " << first << " -> " << last << std::endl;
  return last < 0.5 * first ? 0 : 1;
}
