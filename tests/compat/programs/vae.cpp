// A variational autoencoder: reparameterisation with torch::randn_like, the KL divergence term,
// binary_cross_entropy with a sum reduction, and sampling with torch::normal.
#include <torch/torch.h>

struct VAEImpl : torch::nn::Module {
  VAEImpl(int64_t input, int64_t hidden, int64_t latent)
      : fc1(input, hidden),
        fc_mu(hidden, latent),
        fc_logvar(hidden, latent),
        fc2(latent, hidden),
        fc3(hidden, input) {
    register_module("fc1", fc1);
    register_module("fc_mu", fc_mu);
    register_module("fc_logvar", fc_logvar);
    register_module("fc2", fc2);
    register_module("fc3", fc3);
  }
  std::pair<torch::Tensor, torch::Tensor> encode(torch::Tensor x) {
    torch::Tensor h = torch::relu(fc1->forward(x));
    return {fc_mu->forward(h), fc_logvar->forward(h)};
  }
  torch::Tensor reparameterize(torch::Tensor mu, torch::Tensor logvar) {
    if (!is_training()) return mu;
    torch::Tensor std = torch::exp(0.5 * logvar);
    torch::Tensor eps = torch::randn_like(std);
    return eps.mul(std).add_(mu);
  }
  torch::Tensor decode(torch::Tensor z) {
    return torch::sigmoid(fc3->forward(torch::relu(fc2->forward(z))));
  }
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> forward(torch::Tensor x) {
    auto [mu, logvar] = encode(x);
    return {decode(reparameterize(mu, logvar)), mu, logvar};
  }
  torch::nn::Linear fc1, fc_mu, fc_logvar, fc2, fc3;
};
TORCH_MODULE(VAE);

torch::Tensor loss_function(const torch::Tensor& recon_x, const torch::Tensor& x,
                            const torch::Tensor& mu, const torch::Tensor& logvar) {
  torch::Tensor bce = torch::binary_cross_entropy(recon_x, x, {}, torch::Reduction::Sum);
  torch::Tensor kld = -0.5 * torch::sum(1 + logvar - mu.pow(2) - logvar.exp());
  return bce + kld;
}

int main() {
  torch::manual_seed(4);
  // Two prototype patterns of 16 pixels and noisy copies of them.
  torch::Tensor prototypes = (torch::rand({2, 16}) > 0.5).to(torch::kFloat);
  torch::Tensor labels = torch::randint(0, 2, {128});
  torch::Tensor data = prototypes.index_select(0, labels);

  VAE model(16, 32, 2);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-2));
  double first = 0, last = 0;
  for (int epoch = 0; epoch < 100; ++epoch) {
    optimizer.zero_grad();
    auto [recon, mu, logvar] = model->forward(data);
    torch::Tensor loss = loss_function(recon, data, mu, logvar) / data.size(0);
    loss.backward();
    optimizer.step();
    if (epoch == 0) first = loss.item<double>();
    last = loss.item<double>();
  }
  model->eval();
  torch::NoGradGuard no_grad;
  torch::Tensor z = torch::normal(0.0, 1.0, {8, 2});
  torch::Tensor samples = model->decode(z);
  std::cout << "loss " << first << " -> " << last << ", samples " << samples.sizes() << std::endl;
  return last < 0.5 * first && samples.min().item<float>() >= 0 ? 0 : 1;
}
