// libtorch's classic MNIST example, written exactly as a libtorch user writes it: it includes
// <torch/torch.h> and spells everything torch::..., and builds against Kiln through the compat/
// headers. When the real MNIST idx files are not in the data directory (argv[1], default
// ./data/mnist), it first writes a synthetic MNIST-style dataset there (28x28 images of ten
// stroke patterns with noise), so it runs anywhere without a download.
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <string>

// Where to find the MNIST dataset.
static std::string kDataRoot = "./data/mnist";
const int64_t kTrainBatchSize = 64;
const int64_t kTestBatchSize = 1000;
const int64_t kNumberOfEpochs = 10;
const int64_t kLogInterval = 40;

struct Net : torch::nn::Module {
  Net()
      : conv1(torch::nn::Conv2dOptions(1, 10, /*kernel_size=*/5)),
        conv2(torch::nn::Conv2dOptions(10, 20, /*kernel_size=*/5)),
        fc1(320, 50),
        fc2(50, 10) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv2_drop", conv2_drop);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(torch::max_pool2d(conv1->forward(x), 2));
    x = torch::relu(torch::max_pool2d(conv2_drop->forward(conv2->forward(x)), 2));
    x = x.view({-1, 320});
    x = torch::relu(fc1->forward(x));
    x = torch::dropout(x, /*p=*/0.5, /*train=*/is_training());
    x = fc2->forward(x);
    return torch::log_softmax(x, /*dim=*/1);
  }

  torch::nn::Conv2d conv1;
  torch::nn::Conv2d conv2;
  torch::nn::Dropout2d conv2_drop;
  torch::nn::Linear fc1;
  torch::nn::Linear fc2;
};

template <typename DataLoader>
void train(size_t epoch, Net& model, torch::Device device, DataLoader& data_loader,
           torch::optim::Optimizer& optimizer, size_t dataset_size) {
  model.train();
  size_t batch_idx = 0;
  for (auto& batch : data_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    optimizer.zero_grad();
    auto output = model.forward(data);
    auto loss = torch::nll_loss(output, targets);
    loss.backward();
    optimizer.step();

    if (batch_idx++ % kLogInterval == 0) {
      std::printf("Train Epoch: %zu [%5zu/%5zu] Loss: %.4f\n", epoch,
                  batch_idx * static_cast<size_t>(batch.data.size(0)), dataset_size,
                  loss.template item<float>());
    }
  }
}

template <typename DataLoader>
double test(Net& model, torch::Device device, DataLoader& data_loader, size_t dataset_size) {
  torch::NoGradGuard no_grad;
  model.eval();
  double test_loss = 0;
  int64_t correct = 0;
  for (const auto& batch : data_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    auto output = model.forward(data);
    test_loss += torch::nll_loss(output, targets, /*weight=*/{}, torch::Reduction::Sum)
                     .template item<float>();
    auto pred = output.argmax(1);
    correct += pred.eq(targets).sum().template item<int64_t>();
  }
  test_loss /= static_cast<double>(dataset_size);
  const double accuracy = static_cast<double>(correct) / static_cast<double>(dataset_size);
  std::printf("\nTest set: Average loss: %.4f | Accuracy: %.3f\n", test_loss, accuracy);
  return accuracy;
}

// Ten classes of 28x28 "digits": class c is a horizontal stroke at row 5 + 2c crossed by a
// vertical stroke at column 5 + 2 * (7c mod 10), drawn with a random shift of up to one pixel and
// pixel noise (no shift turns one class into another).
void write_synthetic_mnist(const std::string& root) {
  auto make = [](int64_t n, uint64_t seed, torch::data::datasets::MNIST::Mode mode,
                 const std::string& root) {
    torch::manual_seed(seed);
    auto labels = torch::randint(0, 10, {n});
    auto images = torch::zeros({n, 28, 28});
    auto shifts = torch::randint(-1, 2, {n, 2});
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = labels[i].item<int64_t>();
      const int64_t dy = shifts[i][0].item<int64_t>(), dx = shifts[i][1].item<int64_t>();
      const int64_t row = 5 + 2 * c + dy, col = 5 + 2 * ((7 * c) % 10) + dx;
      auto img = images[i];
      img.index_put_({row, torch::indexing::Slice(3 + dx, 25 + dx)}, 1.0);
      img.index_put_({torch::indexing::Slice(3 + dy, 25 + dy), col}, 1.0);
    }
    images = (images * 0.8 + torch::rand({n, 28, 28}) * 0.3).clamp(0, 1);
    torch::data::datasets::write_mnist_idx(root, (images * 255).to(torch::kUInt8), labels, mode);
  };
  make(6000, 1, torch::data::datasets::MNIST::Mode::kTrain, root);
  make(1000, 2, torch::data::datasets::MNIST::Mode::kTest, root);
  std::printf("No MNIST files in %s: wrote a synthetic MNIST-style dataset there.\n", root.c_str());
}

int main(int argc, char** argv) {
  if (argc > 1) kDataRoot = argv[1];
  torch::manual_seed(1);
  torch::Device device(torch::kCPU);

  namespace fs = std::filesystem;
  if (!fs::exists(fs::path(kDataRoot) / "train-images-idx3-ubyte"))
    write_synthetic_mnist(kDataRoot);

  Net model;
  model.to(device);

  auto train_dataset = torch::data::datasets::MNIST(kDataRoot)
                           .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
                           .map(torch::data::transforms::Stack<>());
  const size_t train_dataset_size = train_dataset.size().value();
  auto train_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(train_dataset), kTrainBatchSize);

  auto test_dataset =
      torch::data::datasets::MNIST(kDataRoot, torch::data::datasets::MNIST::Mode::kTest)
          .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
          .map(torch::data::transforms::Stack<>());
  const size_t test_dataset_size = test_dataset.size().value();
  auto test_loader = torch::data::make_data_loader(std::move(test_dataset), kTestBatchSize);

  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));

  double accuracy = 0;
  for (size_t epoch = 1; epoch <= kNumberOfEpochs; ++epoch) {
    train(epoch, model, device, *train_loader, optimizer, train_dataset_size);
    accuracy = test(model, device, *test_loader, test_dataset_size);
  }
  return accuracy > 0.9 ? 0 : 1;
}
