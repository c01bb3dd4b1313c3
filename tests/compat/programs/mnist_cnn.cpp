// An MNIST-style CNN training loop on synthetic 28x28 "digits": a custom Dataset, a DataLoader
// with Stack<>, Conv2d + max_pool2d + dropout + log_softmax + nll_loss, and Adam.
#include <torch/torch.h>

struct Net : torch::nn::Module {
  Net()
      : conv1(torch::nn::Conv2dOptions(1, 8, /*kernel_size=*/5)),
        conv2(torch::nn::Conv2dOptions(8, 16, /*kernel_size=*/5)),
        fc1(256, 32),
        fc2(32, 4) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv2_drop", conv2_drop);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(torch::max_pool2d(conv1->forward(x), 2));
    x = torch::relu(torch::max_pool2d(conv2_drop->forward(conv2->forward(x)), 2));
    x = x.view({-1, 256});
    x = torch::relu(fc1->forward(x));
    x = torch::dropout(x, /*p=*/0.2, /*train=*/is_training());
    x = fc2->forward(x);
    return torch::log_softmax(x, /*dim=*/1);
  }

  torch::nn::Conv2d conv1;
  torch::nn::Conv2d conv2;
  torch::nn::Dropout2d conv2_drop;
  torch::nn::Linear fc1;
  torch::nn::Linear fc2;
};

// Class k lights up the k-th quadrant of the image.
class QuadrantDataset : public torch::data::datasets::Dataset<QuadrantDataset> {
 public:
  explicit QuadrantDataset(int64_t size) : size_(size) {}

  torch::data::Example<> get(size_t index) override {
    const int64_t label = static_cast<int64_t>(index % 4);
    torch::Tensor image = 0.1 * torch::randn({1, 28, 28});
    const int64_t row = (label / 2) * 14, col = (label % 2) * 14;
    image.slice(1, row, row + 14).slice(2, col, col + 14).add_(1.0);
    return {image, torch::tensor(label)};
  }

  torch::optional<size_t> size() const override { return size_; }

 private:
  int64_t size_;
};

int main() {
  torch::manual_seed(1);
  auto dataset = QuadrantDataset(512).map(torch::data::transforms::Stack<>());
  auto data_loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
      std::move(dataset), torch::data::DataLoaderOptions().batch_size(64));

  auto model = std::make_shared<Net>();
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));

  std::vector<double> epoch_losses;
  for (size_t epoch = 1; epoch <= 3; ++epoch) {
    model->train();
    double total = 0;
    size_t batches = 0;
    for (auto& batch : *data_loader) {
      optimizer.zero_grad();
      torch::Tensor output = model->forward(batch.data);
      torch::Tensor loss = torch::nll_loss(output, batch.target);
      AT_ASSERT(!std::isnan(loss.template item<float>()));
      loss.backward();
      optimizer.step();
      total += loss.template item<double>();
      ++batches;
    }
    epoch_losses.push_back(total / batches);
    std::printf("Epoch %zu | mean loss %.4f\n", epoch, epoch_losses.back());
  }

  model->eval();
  torch::NoGradGuard no_grad;
  auto test = QuadrantDataset(64).map(torch::data::transforms::Stack<>());
  auto test_loader = torch::data::make_data_loader(std::move(test), 64);
  int64_t correct = 0;
  for (const auto& batch : *test_loader) {
    torch::Tensor pred = model->forward(batch.data).argmax(1);
    correct += pred.eq(batch.target).sum().template item<int64_t>();
  }
  std::printf("accuracy %ld / 64\n", correct);
  return epoch_losses.back() < epoch_losses.front() && correct >= 56 ? 0 : 1;
}
