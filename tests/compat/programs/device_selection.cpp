// The opening of most libtorch examples: pick CUDA when available, else the CPU; seed; move the
// model and data there; evaluate under InferenceMode; read results through Scalar.
#include <torch/torch.h>

int main() {
  torch::manual_seed(9);
  torch::DeviceType device_type;
  if (torch::cuda::is_available()) {
    std::cout << "CUDA available! " << torch::cuda::device_count() << " devices." << std::endl;
    device_type = torch::kCUDA;
    torch::cuda::manual_seed_all(9);
  } else {
    std::cout << "Training on CPU." << std::endl;
    device_type = torch::kCPU;
  }
  torch::Device device(device_type);
  std::cout << "cudnn available: " << std::boolalpha << torch::cuda::cudnn_is_available() << "\n";

  torch::nn::Sequential model(torch::nn::Linear(4, 8), torch::nn::ReLU(), torch::nn::Linear(8, 1));
  model->to(device);
  torch::Tensor x = torch::randn({10, 4}).to(device);
  torch::Tensor y = x.sum(1, /*keepdim=*/true).to(device);
  torch::optim::SGD optimizer(model->parameters(), 0.05);

  std::vector<float> losses;
  for (const auto epoch : c10::irange(50)) {
    optimizer.zero_grad();
    auto loss = torch::mse_loss(model->forward(x), y);
    loss.backward();
    optimizer.step();
    losses.push_back(loss.item().toFloat());
    (void)epoch;
  }
  if (torch::cuda::is_available()) torch::cuda::synchronize();

  int64_t positive = 0;
  {
    torch::InferenceMode guard;
    TORCH_CHECK(c10::InferenceMode::is_enabled(), "InferenceMode guard is not enabled");
    torch::Tensor prediction = model->forward(x);
    TORCH_CHECK(!prediction.requires_grad(), "inference outputs must not require grad");
    positive = (prediction > 0).sum().item().toLong();
  }
  TORCH_CHECK(!c10::InferenceMode::is_enabled());
  torch::Scalar total = x.sum().item();
  std::cout << "positive predictions: " << positive << ", sum " << total.toDouble()
            << (total.isFloatingPoint() ? " (floating)" : "") << std::endl;
  const bool device_ok = x.device() == device && x.device().is_cpu() != torch::cuda::is_available();
  return losses.back() < losses.front() && device_ok && positive >= 0 ? 0 : 1;
}
