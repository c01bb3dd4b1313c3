// A character-level language model: Embedding + GRU + Linear, CrossEntropyLoss, trained on a
// repeating string until it predicts the next character.
#include <torch/torch.h>

struct CharModelImpl : torch::nn::Module {
  CharModelImpl(int64_t vocab, int64_t hidden)
      : embedding(vocab, 16),
        gru(torch::nn::GRUOptions(16, hidden).batch_first(true)),
        decoder(hidden, vocab) {
    register_module("embedding", embedding);
    register_module("gru", gru);
    register_module("decoder", decoder);
  }
  torch::Tensor forward(torch::Tensor tokens) {
    auto output = std::get<0>(gru->forward(embedding->forward(tokens)));
    return decoder->forward(output);
  }
  torch::nn::Embedding embedding;
  torch::nn::GRU gru;
  torch::nn::Linear decoder;
};
TORCH_MODULE(CharModel);

int main() {
  torch::manual_seed(7);
  const std::string text = "hello kiln, hello torch. hello kiln, hello torch. ";
  std::string vocab = text;
  std::sort(vocab.begin(), vocab.end());
  vocab.erase(std::unique(vocab.begin(), vocab.end()), vocab.end());

  std::vector<int64_t> ids;
  for (char c : text) ids.push_back(vocab.find(c));
  torch::Tensor sequence = torch::tensor(ids);
  const int64_t length = sequence.size(0) - 1;
  torch::Tensor input = sequence.slice(0, 0, length).unsqueeze(0);
  torch::Tensor target = sequence.slice(0, 1, length + 1).unsqueeze(0);

  CharModel model(vocab.size(), 64);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(0.01));
  torch::nn::CrossEntropyLoss criterion;

  float first = 0, last = 0;
  for (int step = 0; step < 120; ++step) {
    optimizer.zero_grad();
    torch::Tensor logits = model->forward(input);
    torch::Tensor loss = criterion(logits.view({-1, (int64_t)vocab.size()}), target.view(-1));
    loss.backward();
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    optimizer.step();
    if (step == 0) first = loss.item<float>();
    last = loss.item<float>();
  }
  torch::Tensor predicted = model->forward(input).argmax(-1);
  const double accuracy = predicted.eq(target).to(torch::kFloat).mean().item<double>();
  std::cout << "loss " << first << " -> " << last << ", accuracy " << accuracy << std::endl;
  return last < 0.3 * first && accuracy > 0.8 ? 0 : 1;
}
