// all_reduce (sum, float32) at 4 ranks on loopback, 1 KB to 256 MB: time per call and bus
// bandwidth (2 (n-1)/n bytes / time, NCCL's convention). The torch.distributed (gloo) side is
// bench/distributed.py; bench/RESULTS-distributed.md has both. Each rank is a forked process
// with one thread, as torch's ranks are.
//   build/bench/distributed_bench [world=4]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/forked_ranks.h"
#include "kiln/kiln.h"

namespace {

namespace dist = kiln::distributed;
using Clock = std::chrono::steady_clock;

constexpr int64_t kSizes[] = {int64_t{1} << 10, int64_t{1} << 16, int64_t{1} << 20,
                              int64_t{1} << 24, int64_t{1} << 28};

void run_rank(int rank, int world, uint16_t port) {
  kiln::set_num_threads(1);
  bench::join_default_group(rank, world, port);
  for (int64_t bytes : kSizes) {
    kiln::Tensor t = kiln::ones({bytes / 4});
    for (int i = 0; i < 3; ++i) dist::all_reduce(t);
    // Calls per repeat: about 0.2 s of them, at least 2.
    dist::barrier();
    auto start = Clock::now();
    dist::all_reduce(t);
    const double one = std::chrono::duration<double>(Clock::now() - start).count();
    kiln::Tensor calls = kiln::full({1}, std::max(2.0, std::min(2000.0, 0.2 / one)));
    dist::broadcast(calls, 0);  // every rank runs the same count
    const int n = static_cast<int>(calls.item().to_double());
    std::vector<double> per_call;
    for (int rep = 0; rep < 5; ++rep) {
      dist::barrier();
      start = Clock::now();
      for (int i = 0; i < n; ++i) dist::all_reduce(t);
      per_call.push_back(std::chrono::duration<double>(Clock::now() - start).count() / n);
    }
    std::sort(per_call.begin(), per_call.end());
    const double s = per_call[2];
    if (rank == 0)
      std::printf("all_reduce %10lld bytes: %12.1f us  bus %7.3f GB/s  (%d calls x 5)\n",
                  static_cast<long long>(bytes), s * 1e6,
                  2.0 * (world - 1) / world * static_cast<double>(bytes) / s / 1e9, n);
    std::fflush(stdout);
  }
  dist::destroy_process_group();
}

}  // namespace

int main(int argc, char** argv) {
  const int world = argc > 1 ? std::stoi(argv[1]) : 4;
  std::printf("Kiln all_reduce (Gloo), %d ranks on loopback\n", world);
  return bench::run_forked_ranks(world, [&](int r, uint16_t port) { run_rank(r, world, port); });
}
