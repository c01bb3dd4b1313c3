// A DQN-style training step as libtorch programs write it: a Cloneable Q-network whose target
// copy comes from clone(), replay states read and written through accessor<float, 2>(), actions
// gathered after unsqueeze_/squeeze_, TD targets clipped with clip, and an observation resized
// with interpolate and padded with the torch::kBilinear / torch::kReflect mode tags. Expected
// numbers from PyTorch 2.x where they do not depend on random weights.
#include <ATen/core/TensorAccessor.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>

struct QNetImpl : torch::nn::Cloneable<QNetImpl> {
  QNetImpl(int64_t obs, int64_t actions) : obs_(obs), actions_(actions) { reset(); }
  void reset() override {
    fc1 = register_module("fc1", torch::nn::Linear(obs_, 16));
    fc2 = register_module("fc2", torch::nn::Linear(16, actions_));
  }
  torch::Tensor forward(torch::Tensor x) { return fc2->forward(torch::relu(fc1->forward(x))); }

  int64_t obs_, actions_;
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(QNet);

int main() {
  torch::manual_seed(3);
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) {
      std::printf("FAILED: %s\n", what);
      ++failures;
    }
  };

  // Observations: a 2x2 frame upsampled to 3x3 (bilinear), reflect-padded to 5x5, flattened.
  torch::Tensor frame = torch::arange(4, torch::kFloat).view({1, 1, 2, 2});
  namespace F = torch::nn::functional;
  torch::Tensor up = F::interpolate(frame, F::InterpolateFuncOptions()
                                               .size(std::vector<int64_t>({3, 3}))
                                               .mode(torch::kBilinear)
                                               .align_corners(false));
  const float expected_up[9] = {0, 0.5f, 1, 1, 1.5f, 2, 2, 2.5f, 3};
  torch::Tensor up2 = up.squeeze();
  auto u = up2.accessor<float, 2>();
  bool up_ok = u.size(0) == 3 && u.size(1) == 3;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) up_ok = up_ok && std::fabs(u[i][j] - expected_up[3 * i + j]) < 1e-6;
  expect(up_ok, "interpolate(kBilinear) read through accessor<float, 2>");
  torch::Tensor padded = F::pad(up, F::PadFuncOptions({1, 1, 1, 1}).mode(torch::kReflect));
  expect(padded.sizes() == torch::IntArrayRef({1, 1, 5, 5}), "pad(kReflect) shape");
  // PyTorch: F.pad(up, (1, 1, 1, 1), mode="reflect")[0, 0, 0] = [1.5, 1, 1.5, 2, 1.5]
  expect(padded[0][0][0].allclose(torch::tensor({1.5f, 1.f, 1.5f, 2.f, 1.5f})), "reflect values");

  const int64_t obs = 25, n_actions = 3, batch = 4;
  torch::Tensor states = torch::randn({batch, obs});
  {
    // The replay buffer writes the observation into row 0 through an accessor, column-major
    // view included (strides, not contiguity).
    torch::Tensor columns = states.t();
    auto sa = columns.accessor<float, 2>();
    torch::Tensor flat = padded.flatten();
    auto fa = flat.accessor<float, 1>();
    for (int64_t k = 0; k < obs; ++k) sa[k][0] = fa[k];
  }
  expect(states[0].equal(padded.flatten()), "accessor writes through a transposed view");

  QNet net(obs, n_actions);
  auto target = std::dynamic_pointer_cast<QNetImpl>(net->clone());
  expect(target != nullptr, "clone() is a QNetImpl");
  expect(target->forward(states).equal(net->forward(states)), "target starts equal");
  expect(target->fc1->weight.data_ptr() != net->fc1->weight.data_ptr(), "target has own storage");

  torch::optim::Adam optimizer(net->parameters(), torch::optim::AdamOptions(1e-2));
  torch::Tensor actions = torch::tensor({0, 2, 1, 2}, torch::kLong);
  torch::Tensor rewards = torch::tensor({1.f, -1.f, 0.5f, 2.f});
  const float gamma = 0.9f;
  float first_loss = 0, last_loss = 0;
  for (int step = 0; step < 60; ++step) {
    torch::Tensor index = actions.clone();
    index.unsqueeze_(1);  // [batch, 1] for gather
    torch::Tensor q = net->forward(states).gather(1, index);
    q.squeeze_(1);
    torch::Tensor next_q;
    {
      torch::NoGradGuard no_grad;
      next_q = std::get<0>(target->forward(states).max(1));
    }
    torch::Tensor td_target = (rewards + gamma * next_q).clip(-1.5, 1.5);
    torch::Tensor loss = torch::smooth_l1_loss(q, td_target);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    if (step == 0) first_loss = loss.item<float>();
    last_loss = loss.item<float>();
    if (step % 20 == 19) {
      torch::NoGradGuard no_grad;
      auto online = net->named_parameters();
      for (auto& p : target->named_parameters()) p.value().copy_(online[p.key()]);
    }
  }
  std::printf("TD loss %.4f -> %.4f\n", first_loss, last_loss);
  expect(last_loss < first_loss * 0.5f, "the TD loss falls");
  // The last step synced the target.
  expect(target->forward(states).equal(net->forward(states)), "target synced");
  return failures == 0 ? 0 : 1;
}
