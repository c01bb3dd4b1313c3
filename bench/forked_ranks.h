#pragma once
// The distributed benchmarks' ranks: one forked process each, joined through a TCPStore that
// the parent serves on loopback.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>

#include "kiln/kiln.h"

namespace bench {

// Runs body(rank, port) in `world` forked processes; returns 0 when every one exits 0.
inline int run_forked_ranks(int world, const std::function<void(int, uint16_t)>& body) {
  namespace dist = kiln::distributed;
  auto master = std::make_shared<dist::TCPStore>("127.0.0.1", 0, std::nullopt, true);
  const uint16_t port = master->port();
  std::fflush(stdout);
  for (int r = 0; r < world; ++r)
    if (fork() == 0) {
      body(r, port);
      std::fflush(stdout);
      _exit(0);
    }
  int failed = 0, status = 0;
  while (wait(&status) > 0) failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return failed == 0 ? 0 : 1;
}

// Joins this rank to the default group through the parent's store, on loopback.
inline void join_default_group(int rank, int world, uint16_t port) {
  namespace dist = kiln::distributed;
  setenv("GLOO_SOCKET_IFNAME", "lo", 1);
  dist::InitOptions o;
  o.rank = rank;
  o.world_size = world;
  o.store = std::make_shared<dist::TCPStore>("127.0.0.1", port, std::nullopt, false);
  dist::init_process_group(o);
}

}  // namespace bench
