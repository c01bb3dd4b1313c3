// Times one training step (zero_grad, forward, loss, backward, optimizer step) of an MLP, a small
// CNN and the demo's GPT in Kiln and in libtorch, in one process, with the same thread count, the
// same batch and the same number of steps, and writes the Kiln/libtorch time ratios as Markdown.
//
//   train_vs_torch --out RESULTS-train.md [--threads N] [--quick] [--machine TEXT]
//                  [--command TEXT] [--kiln-version TEXT]
//
// --quick times shorter loops (a smoke test of the program, not a measurement).
#include <random>
#include <string>

#include "bench/libtorch/train_case.h"

namespace bench {
namespace {

TrainBatch image_batch(int64_t batch, std::vector<int64_t> image_shape, std::mt19937& rng) {
  TrainBatch b;
  b.input_shape = {batch};
  b.input_shape.insert(b.input_shape.end(), image_shape.begin(), image_shape.end());
  b.target_shape = {batch};
  int64_t n = 1;
  for (int64_t s : b.input_shape) n *= s;
  std::normal_distribution<float> pixel(0, 1);
  b.inputs.resize(n);
  for (auto& v : b.inputs) v = pixel(rng);
  std::uniform_int_distribution<int64_t> label(0, 9);
  b.targets.resize(batch);
  for (auto& t : b.targets) t = label(rng);
  return b;
}

// Random token sequences with next-token targets (the timing does not depend on the values).
TrainBatch token_batch(int64_t batch, std::mt19937& rng) {
  TrainBatch b;
  b.input_shape = b.target_shape = {batch, GptShape::block};
  std::uniform_int_distribution<int64_t> token(0, GptShape::vocab - 1);
  b.tokens.resize(batch * GptShape::block);
  for (auto& t : b.tokens) t = token(rng);
  b.targets.resize(b.tokens.size());
  for (auto& t : b.targets) t = token(rng);
  return b;
}

}  // namespace
}  // namespace bench

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse_options(argc, argv, "RESULTS-train.md", "train_vs_torch");
  apply_threads(o);
  std::mt19937 rng(5);
  const TrainBatch mlp = image_batch(128, {784}, rng), cnn = image_batch(64, {1, 28, 28}, rng),
                   gpt = token_batch(64, rng);

  std::vector<Benchmark> cases;
  auto add = [&](const std::string& name, const std::string& shape, Model m, const TrainBatch& b) {
    cases.push_back({name, shape, [m, &b] { return make_kiln_trainer(m, b); },
                     [m, &b] { return make_torch_trainer(m, b); }, /*tolerance=*/-1});
  };
  add("MLP 784-512-512-10, SGD momentum", shape_str(mlp.input_shape), Model::Mlp, mlp);
  add("CNN 2 conv + 2 linear, Adam", shape_str(cnn.input_shape), Model::Cnn, cnn);
  add("demo GPT (2 layers, 4 heads, 64 ch), AdamW + clip", shape_str(gpt.input_shape) + " tokens",
      Model::Gpt, gpt);

  run_cases(o, "Kiln vs libtorch: one training step",
            "`bash bench/run.sh --train` (the program is bench/libtorch/train_main.cpp)",
            "one step = zero_grad, forward, cross_entropy, backward, (GPT: clip_grad_norm_ 1.0), "
            "optimizer step, on one fixed random batch; the same model shapes, optimizer and "
            "hyper-parameters on both sides (MLP: SGD lr 0.01 momentum 0.9; CNN: Adam lr 1e-3; "
            "GPT: the demo's model, examples/gpt/model.cpp, vocabulary 12, block 8, AdamW lr "
            "3e-3 weight decay 0.01), each library's own default initialisation. After warm-up "
            "steps, repeats alternate Kiln and libtorch, each timing the same number of steps "
            "(column `calls timed`: repeats x steps) lasting about 0.2 s; the time per step is "
            "the median of the repeats. Column `check`: the loss of the last warm-up step on "
            "each side (not compared: different initial weights).",
            cases, o.quick ? 0.02 : 0.2);
  return 0;
}
