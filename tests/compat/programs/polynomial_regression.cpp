// libtorch's classic regression example: fit a cubic polynomial with a Linear layer on
// [x, x^2, x^3] features built with torch::cat, trained until the loss is small.
#include <torch/torch.h>

constexpr int64_t kPolyDegree = 3;

torch::Tensor make_features(torch::Tensor x) {
  x = x.unsqueeze(1);
  std::vector<torch::Tensor> xs;
  for (int64_t i = 0; i < kPolyDegree; ++i) xs.push_back(x.pow(i + 1));
  return torch::cat(xs, 1);
}

int main() {
  torch::manual_seed(11);
  auto poly_desc = "y = 0.5 x - 1.2 x^2 + 0.8 x^3 + 0.3";
  torch::Tensor w_target = torch::tensor({0.5, -1.2, 0.8}).unsqueeze(1);
  torch::Tensor b_target = torch::tensor({0.3});

  torch::nn::Linear fc(w_target.size(0), 1);
  torch::optim::SGD optim(fc->parameters(), 0.1);

  float loss = 0;
  int64_t batch_idx = 0;
  while (++batch_idx) {
    torch::Tensor x = torch::rand({32}) * 2 - 1;
    torch::Tensor batch_x = make_features(x);
    torch::Tensor batch_y = batch_x.mm(w_target) + b_target.item();
    optim.zero_grad();
    auto output = torch::smooth_l1_loss(fc(batch_x), batch_y);
    loss = output.item<float>();
    output.backward();
    optim.step();
    if (loss < 1e-4f || batch_idx == 5000) break;
  }
  std::cout << "Loss: " << loss << " after " << batch_idx << " batches" << std::endl;
  std::cout << "Target function: " << poly_desc << std::endl;
  std::cout << "Learned weights: " << fc->weight.view(-1) << " bias " << fc->bias << std::endl;
  return loss < 1e-4f ? 0 : 1;
}
