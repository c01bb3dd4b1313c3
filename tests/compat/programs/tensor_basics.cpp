// Everyday tensor code from libtorch programs: factories with one-integer sizes, view(-1) and
// reshape(-1), sizes in printf and std::min, var over a dimension, new_zeros, data<T>(), element
// assignment through operator[], index_put_ and TensorOptions.
#include <torch/torch.h>

int main() {
  torch::manual_seed(8);
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) {
      std::printf("FAILED: %s\n", what);
      ++failures;
    }
  };

  torch::Tensor a = torch::randn(3);
  torch::Tensor z = torch::zeros(a.size(0), torch::kCPU);
  torch::Tensor o = torch::ones(5, torch::TensorOptions().dtype(torch::kFloat64));
  expect(a.dim() == 1 && a.size(0) == 3, "randn(3)");
  expect(z.sum().item<float>() == 0 && z.numel() == 3, "zeros(x.size(0), device)");
  expect(o.dtype() == torch::kFloat64 && o.sum().item<double>() == 5, "ones(5, options)");

  torch::Tensor m = torch::arange(24, torch::kFloat).view({2, 3, 4});
  std::printf("m has %ld rows and %ld elements\n", m.size(0), m.numel());
  const int64_t batch = std::min<int64_t>(16, m.size(0));
  expect(batch == 2, "std::min with size(0)");
  expect(m.view(-1).size(0) == 24 && m.reshape(-1).dim() == 1, "view(-1) / reshape(-1)");
  expect(m.flatten().equal(m.reshape({-1})), "flatten");

  // Variance over the last dimension of each row 0..3 + 4k: var of 0,1,2,3 is 5/3.
  torch::Tensor v = m.var({2});
  expect(v.sizes() == torch::IntArrayRef({2, 3}), "var({2}) shape");
  expect(std::abs(v[0][0].item<double>() - 5.0 / 3.0) < 1e-6, "var({2}) value");
  expect(std::abs(m.var(2)[1][2].item<double>() - 5.0 / 3.0) < 1e-6, "var(int) value");

  torch::Tensor n = m.new_zeros({4, 4});
  expect(n.dtype() == m.dtype() && n.sum().item<float>() == 0, "new_zeros");
  torch::Tensor f = torch::full({2, 2}, 7, torch::kInt32);
  expect(f.data_ptr<int32_t>()[3] == 7, "full + data_ptr");
  float* raw = m.data<float>();
  expect(raw[5] == 5.0f, "data<T>()");

  torch::Tensor t = torch::zeros({3});
  t[0] = 1.5;
  t[2] = torch::tensor(2.5);
  expect(t[0].item<float>() == 1.5f && t[2].item<float>() == 2.5f, "t[i] = value");

  torch::Tensor x = torch::zeros({2, 3});
  x.index_put_({1, 2}, 4.0);
  x.index_put_({0, torch::indexing::Slice()}, torch::ones(3));
  expect(x.sum().item<float>() == 7.0f && x[1][2].item<float>() == 4.0f, "index_put_");
  using namespace torch::indexing;
  expect(x.index({Slice(), 0}).sum().item<float>() == 1.0f, "index with Slice");

  torch::Tensor y = torch::empty({2, 2}, torch::dtype(torch::kFloat32).requires_grad(true));
  expect(y.requires_grad() && y.scalar_type() == at::ScalarType::Float, "TensorOptions");
  return failures == 0 ? 0 : 1;
}
