// A hand-written CPU kernel as libtorch extensions write them: AT_DISPATCH_FLOATING_TYPES picks
// scalar_t, at::parallel_for splits the rows, accessors read and write the elements, and a
// custom autograd Function gives it a backward. Checked against the same computation from
// built-in ops, in float and double, plus the dispatch error for an integer tensor.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <iostream>

// y[i][j] = max(x[i][j] * scale[j] + shift, 0)
torch::Tensor scaled_relu_forward(const torch::Tensor& x, const torch::Tensor& scale,
                                  double shift) {
  TORCH_CHECK(x.dim() == 2, "scaled_relu: expected a 2-D input, got ", x.dim(), "-D");
  auto y = torch::empty_like(x);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "scaled_relu_forward", [&] {
    auto xa = x.accessor<scalar_t, 2>();
    auto sa = scale.accessor<scalar_t, 1>();
    auto ya = y.accessor<scalar_t, 2>();
    at::parallel_for(0, x.size(0), 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        for (int64_t j = 0; j < x.size(1); ++j)
          ya[i][j] = std::max<scalar_t>(xa[i][j] * sa[j] + static_cast<scalar_t>(shift), 0);
    });
  });
  return y;
}

class ScaledRelu : public torch::autograd::Function<ScaledRelu> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x,
                               torch::Tensor scale, double shift) {
    auto y = scaled_relu_forward(x, scale, shift);
    ctx->save_for_backward({x, scale, y});
    return y;
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    auto saved = ctx->get_saved_variables();
    auto mask = (saved[2] > 0).to(grads[0].scalar_type());
    auto g = grads[0] * mask;
    return {g * saved[1], (g * saved[0]).sum(0), torch::Tensor()};
  }
};

template <class T>
bool check(torch::Dtype dtype, double tol) {
  torch::manual_seed(0);
  auto opts = torch::TensorOptions().dtype(dtype);
  auto x = torch::randn({300, 7}, opts).requires_grad_(true);
  auto scale = torch::randn({7}, opts).requires_grad_(true);
  auto y = ScaledRelu::apply(x, scale, 0.25);
  y.pow(2).sum().backward();
  auto gx = x.grad().clone(), gs = scale.grad().clone();
  x.grad().zero_();
  scale.grad().zero_();
  auto want = torch::relu(x * scale + 0.25);
  want.pow(2).sum().backward();
  const bool ok = torch::allclose(y, want, tol, tol) && torch::allclose(gx, x.grad(), tol, tol) &&
                  torch::allclose(gs, scale.grad(), tol, tol);
  std::cout << (sizeof(T) == 4 ? "float" : "double") << ": " << (ok ? "ok" : "MISMATCH") << "\n";
  return ok;
}

int main() {
  bool ok = check<float>(torch::kFloat32, 1e-5) && check<double>(torch::kFloat64, 1e-12);
  try {
    scaled_relu_forward(torch::ones({2, 2}, torch::kInt64), torch::ones({2}, torch::kInt64), 0);
    std::cout << "no error for int64\n";
    ok = false;
  } catch (const c10::Error& e) {
    const std::string what = e.what();
    std::cout << "int64: " << what << "\n";
    ok = ok && what.find("scaled_relu_forward") != std::string::npos;
  }
  // A range under the grain runs inline, once, on the calling thread.
  int calls = 0;
  at::parallel_for(0, 10, 100,
                   [&](int64_t begin, int64_t end) { calls += begin == 0 && end == 10; });
  ok = ok && calls == 1;
  return ok ? 0 : 1;
}
