// DistributedDataParallel step time: an MLP of five 1024 x 1024 Linear layers (5.2 M parameters,
// 21 MB of float32 gradients: two buckets) trained with SGD on a batch of 128 per rank. With
// world 1 it runs without DDP (one process, the same per-rank work), so the ratio of the two is
// what data parallelism costs a step. Each rank is a forked process with one thread. The torch
// side is bench/ddp.py; bench/RESULTS-distributed.md has both.
//   build/bench/ddp_bench [world=2]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/forked_ranks.h"
#include "kiln/kiln.h"

namespace {

namespace dist = kiln::distributed;
using namespace kiln;
using Clock = std::chrono::steady_clock;

constexpr int kWarmup = 5, kSteps = 30;
constexpr int64_t kWidth = 1024, kBatch = 128;

nn::Sequential make_model() {
  nn::Sequential m;
  for (int i = 0; i < 4; ++i) {
    m->push_back(nn::Linear(kWidth, kWidth));
    m->push_back(nn::GELU());
  }
  m->push_back(nn::Linear(kWidth, kWidth));
  return m;
}

template <class Forward>
double median_step(nn::Module& params_of, Forward forward, int rank) {
  optim::SGD opt(params_of.parameters(), optim::SGDOptions(0.01));
  manual_seed(static_cast<uint64_t>(rank));
  const Tensor x = randn({kBatch, kWidth}), y = randn({kBatch, kWidth});
  std::vector<double> times;
  for (int s = 0; s < kWarmup + kSteps; ++s) {
    const auto start = Clock::now();
    opt.zero_grad();
    nn::functional::mse_loss(forward(x), y).backward();
    opt.step();
    if (s >= kWarmup) times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void run_rank(int rank, int world, uint16_t port) {
  set_num_threads(1);
  nn::Sequential model = make_model();
  double step;
  if (world == 1) {
    step = median_step(
        *model, [&](const Tensor& x) { return model->forward(x); }, rank);
  } else {
    bench::join_default_group(rank, world, port);
    nn::parallel::DistributedDataParallel ddp(model.ptr());
    step = median_step(
        ddp, [&](const Tensor& x) { return ddp(x); }, rank);
    dist::destroy_process_group();
  }
  if (rank == 0)
    std::printf("Kiln, %d rank(s): %.2f ms a step (median of %d)\n", world, step * 1e3, kSteps);
}

}  // namespace

int main(int argc, char** argv) {
  const int world = argc > 1 ? std::stoi(argv[1]) : 2;
  return bench::run_forked_ranks(world, [&](int r, uint16_t port) { run_rank(r, world, port); });
}
