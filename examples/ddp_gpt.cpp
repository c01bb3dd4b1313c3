// Trains the demo's GPT on multi-digit addition with DistributedDataParallel: every rank draws its
// own batches, and backward averages the gradients across the ranks, so N ranks train on N times
// the batch of one.
//
//   build/tools/kiln/kiln run -n 2 build/examples/ddp_gpt [--steps N] [--batch B] [--digits D]
//       [--checkpoint PATH] [--save-every N] [--crash-at STEP]
//
// Rank 0 saves a checkpoint every --save-every steps and every rank resumes from it when it
// exists, so `kiln run --max-restarts 1 ... --crash-at 60` shows a failed rank restarting the job
// from its last checkpoint (--crash-at makes rank 1 of the first attempt exit at that step). The
// program exits 0 when the loss fell and the replicas ended identical.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include "examples/gpt/model.h"
#include "examples/gpt/tasks.h"
#include "kiln/kiln.h"

using namespace kiln;
namespace dist = kiln::distributed;

namespace {

struct Args {
  int64_t steps = 300, batch = 32, save_every = 50, crash_at = -1;
  int digits = 2;
  std::string checkpoint = "ddp_gpt.ckpt";
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--steps") && has_value)
      a.steps = std::stoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--batch") && has_value)
      a.batch = std::stoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--digits") && has_value)
      a.digits = std::stoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--checkpoint") && has_value)
      a.checkpoint = argv[++i];
    else if (!std::strcmp(argv[i], "--save-every") && has_value)
      a.save_every = std::stoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--crash-at") && has_value)
      a.crash_at = std::stoll(argv[++i]);
    else
      KILN_FAIL("ddp_gpt: unknown argument '", argv[i], "' (see the comment at the top)");
  }
  return a;
}

// The largest difference of any parameter between this rank and rank 0.
double max_difference_from_rank0(const std::vector<Tensor>& params) {
  NoGradGuard no_grad;
  Tensor flat = nn::utils::parameters_to_vector(params);
  Tensor rank0 = flat.clone();
  dist::broadcast(rank0, 0);
  Tensor diff = (flat - rank0).abs().max().reshape({1});
  dist::all_reduce(diff, dist::ReduceOp::MAX);
  return diff.item<double>();
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  dist::init_process_group();
  const int rank = dist::get_rank(), world = dist::get_world_size();
  const char* restart_env = std::getenv("KILN_RESTART_COUNT");
  const int restart = restart_env ? std::atoi(restart_env) : 0;

  gpt::AdditionTask task(args.digits, /*seed=*/1234);
  gpt::Config config;
  config.vocab_size = task.vocab_size();
  config.block_size = task.sequence_length();
  gpt::GPT model(config);
  nn::parallel::DistributedDataParallel ddp(model);
  optim::AdamW opt(ddp.parameters(), optim::AdamWOptions(3e-3).weight_decay(0.01));

  int64_t first = 0;
  if (std::filesystem::exists(args.checkpoint)) {
    first = std::stoll(io::load_checkpoint(args.checkpoint, *model, &opt).at("step"));
    if (rank == 0)
      std::printf("resumed from %s at step %lld\n", args.checkpoint.c_str(), (long long)first);
  }
  if (rank == 0)
    std::printf("GPT on %d-digit addition: %d ranks x %lld problems a step, steps %lld to %lld\n",
                args.digits, world, (long long)args.batch, (long long)first, (long long)args.steps);

  std::mt19937_64 rng(1000003 * static_cast<uint64_t>(rank) + static_cast<uint64_t>(first));
  double first_loss = NAN, loss_value = NAN;
  for (int64_t step = first; step < args.steps; ++step) {
    if (step == args.crash_at && rank == 1 && restart == 0) {
      std::fprintf(stderr, "crashing at step %lld on purpose (--crash-at)\n", (long long)step);
      std::fflush(stderr);
      std::_Exit(3);  // as a crash: no destructors, no goodbye to the other ranks
    }
    auto [x, y] = task.batch(args.batch, rng);
    Tensor loss = nn::functional::cross_entropy(ddp(x).flatten(0, 1), y.flatten());
    opt.zero_grad();
    loss.backward();
    nn::utils::clip_grad_norm_(ddp.parameters(), 1.0);
    opt.step();
    loss_value = loss.item<double>();
    if (std::isnan(first_loss)) first_loss = loss_value;
    if (rank == 0 && (step % 50 == 0 || step + 1 == args.steps))
      std::printf("step %5lld  loss %.4f\n", (long long)step, loss_value);
    if ((step + 1) % args.save_every == 0) {
      if (rank == 0)
        io::save_checkpoint(args.checkpoint, *model, &opt, {{"step", std::to_string(step + 1)}});
      dist::barrier();  // no rank resumes from a checkpoint being written
    }
  }

  const double spread = max_difference_from_rank0(ddp.parameters());
  int status = 0;
  if (rank == 0) {
    model->eval();
    NoGradGuard no_grad;
    auto [prompts, answers] = task.test_set();
    Tensor generated =
        model->generate(prompts, task.answer_length()).slice(1, task.prompt_length());
    const double accuracy = generated.eq(answers).all(1).to(kFloat64).mean().item<double>();
    std::printf("held-out accuracy %.1f%%, largest parameter difference between ranks %g\n",
                100 * accuracy, spread);
  }
  if (spread != 0 || !(loss_value < first_loss || first == args.steps)) status = 1;
  dist::destroy_process_group();
  return status;
}
