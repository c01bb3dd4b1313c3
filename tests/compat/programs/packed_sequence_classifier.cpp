// Classifies variable-length sequences (is the sum of the values positive?) with a packed LSTM
// and a PReLU head, checkpoints model, optimizer and epoch in one archive, and reloads it.
#include <torch/torch.h>

#include <sstream>

struct ClassifierImpl : torch::nn::Module {
  ClassifierImpl()
      : lstm(torch::nn::LSTMOptions(1, 16).batch_first(true)),
        act(torch::nn::PReLUOptions().num_parameters(16)),
        head(16, 2) {
    register_module("lstm", lstm);
    register_module("act", act);
    register_module("head", head);
  }

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& lengths) {
    auto packed = torch::nn::utils::rnn::pack_padded_sequence(x, lengths, /*batch_first=*/true,
                                                              /*enforce_sorted=*/false);
    auto [out, state] = lstm->forward_with_packed_input(packed);
    torch::Tensor h = std::get<0>(state)[0];  // last step of each sequence: [batch, 16]
    return head->forward(act->forward(h));
  }

  torch::nn::LSTM lstm;
  torch::nn::PReLU act;
  torch::nn::Linear head;
};
TORCH_MODULE(Classifier);

struct Batch {
  torch::Tensor x, lengths, labels;
};

Batch make_batch(int64_t n) {
  std::vector<torch::Tensor> seqs;
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = torch::randint(2, 9, {1}).item<int64_t>();
    seqs.push_back(torch::randn({len, 1}));
    lengths.push_back(len);
  }
  torch::Tensor x = torch::nn::utils::rnn::pad_sequence(seqs, /*batch_first=*/true);
  torch::Tensor labels = (x.sum({1, 2}) > 0).to(torch::kLong);
  return {x, torch::tensor(lengths), labels};
}

int64_t count_correct(const torch::Tensor& logits, const torch::Tensor& labels) {
  torch::Tensor hits = (logits.argmax(1) == labels).to(torch::kLong).contiguous();
  const int64_t* p = hits.data_ptr<int64_t>();
  return at::parallel_reduce(
      int64_t{0}, hits.numel(), 16, int64_t{0},
      [&](int64_t b, int64_t e, int64_t ident) {
        for (int64_t i = b; i < e; ++i) ident += p[i];
        return ident;
      },
      [](int64_t a, int64_t b) { return a + b; });
}

int main() {
  torch::manual_seed(0);
  Classifier model;
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(0.02));
  const Batch test = make_batch(256);

  for (int epoch = 0; epoch < 300; ++epoch) {
    const Batch batch = make_batch(64);
    optimizer.zero_grad();
    torch::Tensor loss =
        torch::nn::functional::cross_entropy(model(batch.x, batch.lengths), batch.labels);
    if (epoch == 0) {
      torch::autograd::DetectAnomalyGuard detect_anomaly;
      loss.backward();
    } else {
      loss.backward();
    }
    std::vector<torch::Tensor> grads;
    for (const auto& p : model->parameters()) grads.push_back(p.grad().flatten());
    const double grad_norm = torch::linalg::vector_norm(torch::cat(grads), 2).item<double>();
    TORCH_CHECK(std::isfinite(grad_norm), "gradient norm is ", grad_norm);
    optimizer.step();
  }

  torch::NoGradGuard no_grad;
  model->eval();
  const torch::Tensor logits = model(test.x, test.lengths);
  const int64_t correct = count_correct(logits, test.labels);
  std::cout << "accuracy " << correct << " / 256" << std::endl;

  std::stringstream checkpoint;
  torch::serialize::OutputArchive archive, optimizer_archive;
  model->save(archive);
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
  archive.write("epoch", torch::Scalar(300).toLong());
  archive.save_to(checkpoint);

  Classifier restored;
  torch::optim::Adam restored_optimizer(restored->parameters(), torch::optim::AdamOptions(0.02));
  torch::serialize::InputArchive in, optimizer_in;
  in.load_from(checkpoint);
  restored->load(in);
  in.read("optimizer", optimizer_in);
  restored_optimizer.load(optimizer_in);
  c10::IValue epoch;
  in.read("epoch", epoch);
  restored->eval();
  const bool same = torch::equal(restored(test.x, test.lengths), logits);
  std::cout << "restored at epoch " << epoch.toInt() << ", same logits: " << same << std::endl;
  return correct >= 230 && same && epoch.toInt() == 300 ? 0 : 1;
}
