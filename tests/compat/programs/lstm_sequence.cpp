// An LSTM that predicts the next value of a sine wave, with nn::MSELoss and Adam.
#include <torch/torch.h>

struct SequenceModelImpl : torch::nn::Module {
  SequenceModelImpl(int64_t hidden)
      : lstm(torch::nn::LSTMOptions(1, hidden).num_layers(1).batch_first(true)), head(hidden, 1) {
    register_module("lstm", lstm);
    register_module("head", head);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    auto [output, state] = lstm->forward(x);
    auto [h, c] = state;
    TORCH_CHECK(h.size(0) == 1 && c.size(0) == 1, "one layer expected");
    return head->forward(output);  // (batch, time, 1)
  }

  torch::nn::LSTM lstm;
  torch::nn::Linear head;
};
TORCH_MODULE(SequenceModel);

int main() {
  torch::manual_seed(2);
  const int64_t batch = 16, steps = 20;
  torch::Tensor phase = torch::rand({batch, 1}) * 6.28;
  torch::Tensor t = torch::arange(steps + 1).to(torch::kFloat) * 0.3;
  torch::Tensor wave = torch::sin(phase + t.unsqueeze(0)).unsqueeze(-1);  // (batch, steps+1, 1)
  torch::Tensor input = wave.slice(1, 0, steps);
  torch::Tensor target = wave.slice(1, 1, steps + 1);

  SequenceModel model(24);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(0.01));
  torch::nn::MSELoss criterion;

  float first = 0, last = 0;
  for (int i = 0; i < 150; ++i) {
    optimizer.zero_grad();
    torch::Tensor loss = criterion(model(input), target);
    loss.backward();
    optimizer.step();
    if (i == 0) first = loss.item<float>();
    last = loss.item<float>();
  }
  std::cout << "mse " << first << " -> " << last << std::endl;
  return last < 0.1 * first ? 0 : 1;
}
