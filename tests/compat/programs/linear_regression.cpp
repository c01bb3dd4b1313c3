// Linear regression y = 3x - 2 + noise with nn::Linear, SGD and mse_loss.
#include <torch/torch.h>

int main() {
  torch::manual_seed(0);
  const int64_t n = 256;
  torch::Tensor x = torch::rand({n, 1}) * 4 - 2;
  torch::Tensor y = 3 * x - 2 + 0.01 * torch::randn({n, 1});

  torch::nn::Linear model(1, 1);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));

  float first_loss = 0, last_loss = 0;
  for (int epoch = 0; epoch < 200; ++epoch) {
    optimizer.zero_grad();
    torch::Tensor loss = torch::mse_loss(model->forward(x), y);
    loss.backward();
    optimizer.step();
    if (epoch == 0) first_loss = loss.item().toFloat();
    last_loss = loss.item<float>();
  }
  const float w = model->weight.item<float>();
  const float b = model->bias.item<float>();
  std::cout << "loss " << first_loss << " -> " << last_loss << ", w = " << w << ", b = " << b
            << std::endl;
  if (!(last_loss < first_loss && std::abs(w - 3) < 0.05 && std::abs(b + 2) < 0.05)) return 1;
  return 0;
}
