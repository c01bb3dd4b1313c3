// A rank for launcher_test: joins the group through env://, all-reduces rank + 1 and prints what
// it saw. --fail-rank R makes rank R die abruptly (as a crash would: _exit(3), no destructors)
// after the all-reduce while the others wait in a barrier, in attempts before
// --fail-before-restart K (default: every attempt).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <unistd.h>

#include "kiln/kiln.h"

namespace dist = kiln::distributed;

int main(int argc, char** argv) {
  int fail_rank = -1, fail_before = 1 << 30;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--fail-rank")) fail_rank = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--fail-before-restart")) fail_before = std::atoi(argv[i + 1]);
  }
  const char* restart_env = std::getenv("KILN_RESTART_COUNT");
  const int restart = restart_env ? std::atoi(restart_env) : 0;
  dist::init_process_group();
  const int rank = dist::get_rank();
  kiln::Tensor t = kiln::full({1}, rank + 1, kiln::kInt64);
  dist::all_reduce(t);
  std::printf("rank %d of %d local_rank %s sum %lld restart %d\n", rank, dist::get_world_size(),
              std::getenv("LOCAL_RANK"), static_cast<long long>(t.item<int64_t>()), restart);
  std::fflush(stdout);
  if (rank == fail_rank && restart < fail_before) {
    std::fprintf(stderr, "failing on purpose\npartial line without a newline");
    std::fflush(stderr);
    _exit(3);
  }
  dist::barrier();
  dist::destroy_process_group();
  return 0;
}
