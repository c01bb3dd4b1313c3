// kiln::func and autocast on the CPU: per-sample gradients by vmap(grad) and by a loop of grads,
// a training step of the demo's GPT in float32 and under autocast(bfloat16), and int8 layers
// (kiln::quantization) against float32 ones. Prints
// "name milliseconds" lines; bench/func_quant.py runs torch's side and prints the ratios.
//
//   build/bench/func_quant
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>

#include "examples/gpt/model.h"
#include "kiln/amp/autocast.h"
#include "kiln/func/func.h"
#include "kiln/kiln.h"
#include "kiln/quantization/quantize.h"

using namespace kiln;
namespace F = kiln::func;

namespace {

double time_ms(const std::function<void()>& body, int reps) {
  body();  // warm-up
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) body();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
             .count() /
         reps;
}

using Params = std::map<std::string, Tensor>;

// A 3-layer MLP on 64 inputs (the torch side builds the same).
struct MlpImpl : nn::Module {
  MlpImpl() {
    fc1 = register_module("fc1", nn::Linear(64, 128));
    fc2 = register_module("fc2", nn::Linear(128, 128));
    fc3 = register_module("fc3", nn::Linear(128, 10));
  }
  Tensor forward(const Tensor& x) { return fc3(fc2(fc1(x).relu()).relu()); }
  nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};
KILN_MODULE(Mlp);

// A convolution (8 channels, 3x3) on 16x16 images and a linear layer.
struct CnnImpl : nn::Module {
  CnnImpl() {
    conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(1, 8, 3)));
    fc = register_module("fc", nn::Linear(8 * 14 * 14, 10));
  }
  Tensor forward(const Tensor& x) { return fc(conv(x).relu().flatten(1)); }
  nn::Conv2d conv{nullptr};
  nn::Linear fc{nullptr};
};
KILN_MODULE(Cnn);

template <class Model>
void per_sample_gradients(const char* name, Model model, std::vector<int64_t> input_sizes) {
  manual_seed(0);
  const int64_t batch = 64;
  input_sizes.insert(input_sizes.begin(), batch);
  Tensor x = randn(input_sizes), y = randint(0, 10, {batch});
  Params params;
  for (const auto& p : model->named_parameters()) params.emplace(p.key(), p.value().detach());
  auto loss = [&](const Params& p, const Tensor& xi, const Tensor& yi) {
    return nn::functional::cross_entropy(F::functional_call(model, p, xi.unsqueeze(0)),
                                         yi.unsqueeze(0));
  };
  auto vmapped = F::vmap(F::grad(loss), {std::nullopt, 0, 0});
  auto loop = [&] {
    for (int64_t b = 0; b < batch; ++b) F::grad(loss)(params, x[b], y[b]);
  };
  std::printf("per_sample_grads_%s_vmap %.4f\n", name, time_ms([&] { vmapped(params, x, y); }, 20));
  std::printf("per_sample_grads_%s_loop %.4f\n", name, time_ms(loop, 5));
}

void gpt_step(bool bf16) {
  manual_seed(0);
  gpt::GPT model(gpt::Config{65, 64, 4, 4, 256, 0.0});
  optim::AdamW opt(model->parameters(), optim::AdamWOptions(3e-4));
  Tensor idx = randint(0, 65, {16, 64}), target = randint(0, 65, {16, 64});
  auto step = [&] {
    Tensor loss;
    {
      std::optional<autocast> on;
      if (bf16) on.emplace(kCPU, kBFloat16);
      Tensor logits = model(idx);
      loss = nn::functional::cross_entropy(logits.view({-1, 65}), target.view({-1}));
    }
    opt.zero_grad();
    loss.backward();
    opt.step();
  };
  std::printf("gpt_train_step_%s %.4f\n", bf16 ? "autocast_bf16" : "float32", time_ms(step, 5));
}

// int8 layers against float32 ones: a Linear (batch 64, 1024 -> 1024) and a Conv2d (batch 16,
// 64 -> 64 channels, 3x3, padding 1, 28x28), statically quantized (x86 qconfig, calibrated on
// 4 batches), and the Linear dynamically quantized. Inputs are float32 on every side.
template <class Layer>
void int8_layer(const char* name, Layer layer, const std::vector<int64_t>& input_sizes) {
  manual_seed(0);
  NoGradGuard no_grad;
  const Tensor x = randn(input_sizes);
  std::printf("%s_float32 %.4f\n", name, time_ms([&] { layer->forward(x); }, 50));
  auto prepared = quantization::prepare(*layer);
  for (int i = 0; i < 4; ++i) layer->forward(randn(input_sizes));
  quantization::convert(prepared);
  std::printf("%s_int8 %.4f\n", name, time_ms([&] { layer->forward(x); }, 50));
}

void int8_dynamic_linear() {
  manual_seed(0);
  NoGradGuard no_grad;
  nn::Linear fc(1024, 1024);
  const Tensor x = randn({64, 1024});
  quantization::quantize_dynamic(*fc);
  std::printf("linear_dynamic_int8 %.4f\n", time_ms([&] { fc->forward(x); }, 50));
}

}  // namespace

// `func_quant int8` runs only the int8 rows.
int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "int8") {
    per_sample_gradients("mlp", Mlp(), {64});
    per_sample_gradients("cnn", Cnn(), {1, 16, 16});
    gpt_step(false);
    gpt_step(true);
  }
  int8_layer("linear", nn::Linear(1024, 1024), {64, 1024});
  int8_layer("conv2d", nn::Conv2d(nn::Conv2dOptions(64, 64, 3).padding(1)), {16, 64, 28, 28});
  int8_dynamic_linear();
}
