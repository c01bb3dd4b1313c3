// torch::save / torch::load of a model held in a std::shared_ptr, of a module holder, of a
// tensor and of a std::vector<Tensor>.
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>

struct Net : torch::nn::Module {
  Net() {
    fc1 = register_module("fc1", torch::nn::Linear(3, 5));
    fc2 = register_module("fc2", torch::nn::Linear(5, 2));
    register_buffer("running", torch::zeros({2}));
  }
  torch::Tensor forward(torch::Tensor x) { return fc2->forward(torch::relu(fc1->forward(x))); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

int main() {
  torch::manual_seed(10);
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("kiln_compat_save_load_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);

  auto net = std::make_shared<Net>();
  torch::Tensor input = torch::randn({4, 3});
  torch::Tensor expected = net->forward(input);
  torch::save(net, dir + "/net.pt");
  auto restored = std::make_shared<Net>();
  torch::load(restored, dir + "/net.pt");
  bool ok = torch::allclose(restored->forward(input), expected);

  torch::nn::Linear linear(3, 3);
  torch::save(linear, dir + "/linear.pt");
  torch::nn::Linear linear2(3, 3);
  torch::load(linear2, dir + "/linear.pt");
  ok = ok && linear2->weight.equal(linear->weight) && linear2->bias.equal(linear->bias);

  torch::Tensor t = torch::arange(6).reshape({2, 3});
  torch::save(t, dir + "/tensor.pt");
  torch::Tensor t2;
  torch::load(t2, dir + "/tensor.pt");
  ok = ok && t2.equal(t) && t2.scalar_type() == torch::kLong;

  std::vector<torch::Tensor> tensors = {torch::ones({2}), torch::zeros({3, 1}),
                                        torch::tensor({true})};
  torch::save(tensors, dir + "/tensors.pt");
  std::vector<torch::Tensor> tensors2;
  torch::load(tensors2, dir + "/tensors.pt");
  ok = ok && tensors2.size() == 3;
  for (size_t i = 0; ok && i < tensors.size(); ++i) ok = tensors2[i].equal(tensors[i]);

  std::filesystem::remove_all(dir);
  std::cout << (ok ? "saved and loaded" : "MISMATCH") << std::endl;
  return ok ? 0 : 1;
}
