// Kiln's side of bench/cuda_vs_torch.py: the CUDA backend's eager speed on the cases
// bench/RESULTS-cuda.md records. Prints one line per case, "name seconds-per-call", each the median
// of `repeats` timed runs of `inner` calls between device synchronisations, after warm-up calls
// (which also take the NVRTC compilations and cuBLAS handle creation out of the numbers).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "examples/gpt/model.h"
#include "kiln/kiln.h"

using namespace kiln;

double median_seconds(const std::function<void()>& f, int inner, int repeats = 9) {
  for (int i = 0; i < 3; ++i) f();
  cuda::synchronize();
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < inner; ++i) f();
    cuda::synchronize();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
                inner);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main() {
  if (!cuda::is_available()) {
    std::printf("no CUDA device\n");
    return 1;
  }
  const TensorOptions gpu = TensorOptions(kFloat32).device(kCUDA);
  manual_seed(0);
  {
    const int64_t n = int64_t{1} << 26;  // 256 MiB per float32 operand
    Tensor a = randn({n}).to(kCUDA), b = randn({n}).to(kCUDA);
    std::printf("add_f32_2^26 %.9f\n", median_seconds([&] { Tensor c = a + b; }, 20));
    Tensor h = a.to(kBFloat16);
    std::printf("gelu_bf16_2^26 %.9f\n", median_seconds([&] { Tensor c = gelu(h); }, 20));
    Tensor m = a.view({8192, 8192});
    std::printf("sum_rows_f32_8192^2 %.9f\n", median_seconds([&] { Tensor c = m.sum(1); }, 20));
    std::printf("softmax_f32_8192^2 %.9f\n", median_seconds([&] { Tensor c = softmax(m, 1); }, 20));
    Tensor at = a.view({8192, 8192}).t();
    std::printf("copy_transpose_f32_8192^2 %.9f\n",
                median_seconds([&] { Tensor c = at.contiguous(); }, 20));
    Tensor e = randn({50304, 768}).to(kCUDA).to(kBFloat16);
    Tensor ids = randint(0, 50304, {8, 1024}).to(kCUDA);
    std::printf("embedding_bf16_8x1024x768 %.9f\n",
                median_seconds([&] { Tensor c = embedding(e, ids); }, 50));
    Tensor logits = m.narrow(1, 0, 4096).contiguous();
    Tensor target = randint(0, 4096, {8192}).to(kCUDA);
    std::printf(
        "cross_entropy_f32_8192x4096 %.9f\n",
        median_seconds([&] { Tensor c = nn::functional::cross_entropy(logits, target); }, 20));
  }
  {
    Tensor a = randn({8192, 8192}).to(gpu.device()).to(kBFloat16);
    Tensor b = randn({8192, 8192}).to(gpu.device()).to(kBFloat16);
    std::printf("mm_bf16_8192 %.9f\n", median_seconds([&] { Tensor c = a.matmul(b); }, 10));
    Tensor af = a.to(kFloat32), bf = b.to(kFloat32);
    std::printf("mm_f32_4096 %.9f\n",
                median_seconds(
                    [&] { Tensor c = af.narrow(0, 0, 4096).matmul(bf.narrow(1, 0, 4096)); }, 10));
  }
  {
    // A small model's forward and backward: eager launches, then the same replayed from a CUDA
    // graph (launch overhead is most of the eager time).
    nn::Sequential model(nn::Linear(256, 256), nn::GELU(), nn::Linear(256, 256), nn::GELU(),
                         nn::Linear(256, 10));
    model->to(Device(kCUDA));
    Tensor x = randn({64, 256}).to(kCUDA), t = randn({64, 10}).to(kCUDA);
    auto step = [&] { nn::functional::mse_loss(model->forward(x), t).backward(); };
    auto no_grads = [&] {
      for (auto& p : model->parameters()) p.mutable_grad() = Tensor();
    };
    std::printf("mlp_step_eager %.9f\n", median_seconds(
                                             [&] {
                                               no_grads();
                                               step();
                                             },
                                             50));
    no_grads();
    cuda::synchronize();
    cuda::CUDAGraph g;
    bool captured = true;
    try {
      cuda::graph capture(g);
      step();
    } catch (const Error& e) {
      std::fprintf(stderr, "mlp_step_graph: %s\n", e.what());
      captured = false;
    }
    std::printf("mlp_step_graph %.9f\n",
                captured ? median_seconds([&] { g.replay(); }, 50) : 0.0 / 0.0);
  }
  {
    // The demo's GPT, larger: a training step (forward, cross-entropy, backward, AdamW).
    gpt::Config c;
    c.vocab_size = 512;
    c.block_size = 128;
    c.n_layer = 4;
    c.n_head = 4;
    c.n_embd = 256;
    gpt::GPT model(c);
    model->to(Device(kCUDA));
    optim::AdamW opt(model->parameters(), optim::AdamWOptions(1e-3));
    Tensor idx = randint(0, 512, {16, 128}).to(kCUDA),
           target = randint(0, 512, {16, 128}).to(kCUDA);
    auto loss = [&] {
      return nn::functional::cross_entropy(model->forward(idx).view({-1, 512}), target.view({-1}));
    };
    auto forward_backward = [&] {
      opt.zero_grad();
      loss().backward();
    };
    // The whole step, then its parts.
    std::printf("gpt_train_step %.9f\n", median_seconds(
                                             [&] {
                                               forward_backward();
                                               opt.step();
                                             },
                                             10));
    std::printf("gpt_forward_loss %.9f\n", median_seconds([&] { loss(); }, 10));
    std::printf("gpt_forward_backward %.9f\n", median_seconds(forward_backward, 10));
    std::printf("gpt_adamw_step %.9f\n", median_seconds([&] { opt.step(); }, 10));
  }
  {
    // A ResNet layer's 3x3 convolution, forward and both gradients (cuDNN on both sides).
    Tensor x = randn({32, 64, 56, 56}).to(kCUDA).to(kBFloat16).requires_grad_(true);
    Tensor w = (randn({64, 64, 3, 3}) * 0.05).to(kCUDA).to(kBFloat16).requires_grad_(true);
    Tensor gy = randn({32, 64, 56, 56}).to(kCUDA).to(kBFloat16);
    std::printf("conv_bf16_3x3_fwd_bwd %.9f\n", median_seconds(
                                                     [&] {
                                                       Tensor y = convolution(x, w, {}, {1}, {1},
                                                                              {1}, false, {0}, 1);
                                                       y.backward(gy);
                                                     },
                                                     10));
  }
  {
    // Host to device, 256 MiB: from pageable memory, and from pinned memory without waiting.
    Tensor host = randn({int64_t{1} << 26}), pinned = host.pin_memory();
    std::printf("h2d_pageable_f32_2^26 %.9f\n",
                median_seconds([&] { Tensor d = host.to(Device(kCUDA)); }, 5));
    std::printf("h2d_pinned_f32_2^26 %.9f\n",
                median_seconds([&] { Tensor d = pinned.to(Device(kCUDA), true); }, 5));
  }
  {
    Tensor x = ones({1}, gpu), y = ones({1}, gpu);
    std::printf("add_1_element %.9f\n", median_seconds([&] { Tensor c = x + y; }, 2000));
  }
  return 0;
}
