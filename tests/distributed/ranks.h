#pragma once
// Runs a test body in one forked process per rank, each bounded in time. A rank fails by
// throwing (the message is printed with its rank); the parent's test then fails naming it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kiln/core/error.h"
#include "kiln/distributed/distributed.h"
#include "kiln/distributed/tcp_store.h"
#include "kiln/kiln.h"

namespace kiln::distributed::testing {

// The exit status a rank uses to say "this failure was expected" (a rank killed on purpose).
constexpr int kExpectedExit = 42;

// Forks `world` processes running body(rank); waits for all of them up to `limit`, killing the
// rest after it. Returns each rank's exit status (-1: killed after the limit).
//
// The ranks start together, once every one is forked: a rank that connected early would wake the
// parent's store thread while the parent forks the next rank, and a fork taken while that thread
// holds a lock (the sanitizers' allocator) leaves the child waiting on it forever.
inline std::vector<int> run_ranks(int world, const std::function<void(int)>& body,
                                  std::chrono::seconds limit = std::chrono::seconds(30)) {
  std::fflush(stdout);
  std::fflush(stderr);
  int gate[2];
  if (pipe(gate) != 0) throw Error("run_ranks: pipe failed");
  std::vector<pid_t> pids;
  for (int rank = 0; rank < world; ++rank) {
    const pid_t pid = fork();
    if (pid == 0) {
      close(gate[1]);
      char c;  // read returns at end of file, once the parent has forked every rank
      while (read(gate[0], &c, 1) < 0 && errno == EINTR) continue;
      close(gate[0]);
      int code = 0;
      try {
        body(rank);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
        code = 1;
      }
      std::fflush(stderr);
      _exit(code);  // no destructors of the parent's objects in the child
    }
    pids.push_back(pid);
  }
  close(gate[0]);
  close(gate[1]);
  std::vector<int> status(world, -1);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int left = world;
  while (left > 0 && std::chrono::steady_clock::now() < deadline) {
    for (int r = 0; r < world; ++r) {
      if (pids[r] == 0) continue;
      int s = 0;
      if (waitpid(pids[r], &s, WNOHANG) == pids[r]) {
        status[r] = WIFEXITED(s) ? WEXITSTATUS(s) : 128 + WTERMSIG(s);
        pids[r] = 0;
        --left;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (pid_t pid : pids)
    if (pid != 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  return status;
}

// Every rank exited 0.
inline void expect_all_passed(const std::vector<int>& status) {
  for (size_t r = 0; r < status.size(); ++r)
    EXPECT_EQ(status[r], 0) << "rank " << r
                            << (status[r] == -1
                                    ? std::string(" did not finish in time")
                                    : " failed with exit status " + std::to_string(status[r]));
}

// Throws (failing the rank) unless cond holds.
template <class... Args>
void require(bool cond, const Args&... what) {
  if (!cond) throw Error(detail::str_cat(what...));
}

// Runs f, which must throw a kiln::Error whose message holds every fragment.
template <class F>
void require_error(F&& f, std::initializer_list<std::string_view> fragments) {
  try {
    f();
  } catch (const Error& e) {
    const std::string m = e.what();
    for (std::string_view fragment : fragments)
      require(m.find(fragment) != std::string::npos, "the error lacks '", fragment, "': ", m);
    return;
  }
  require(false, "no error; expected one saying '", *fragments.begin(), "'");
}

// A shell command's exit status and its stdout and stderr together.
struct CommandResult {
  int status = -1;
  std::string output;
};
inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) r.output.append(buf, n);
  const int s = pclose(pipe);
  r.status = WIFEXITED(s) ? WEXITSTATUS(s) : -1;
  return r;
}

// The port is read before the ranks fork: a child must not touch the master, whose server
// thread exists only in the parent.
struct Rendezvous {
  std::shared_ptr<TCPStore> master =
      std::make_shared<TCPStore>("127.0.0.1", 0, std::nullopt, true, std::chrono::seconds(20));
  uint16_t port = master->port();
  void init(int rank, int world,
            std::chrono::milliseconds timeout = std::chrono::seconds(20)) const {
    setenv("GLOO_SOCKET_IFNAME", "lo", 1);
    InitOptions o;
    o.rank = rank;
    o.world_size = world;
    o.timeout = timeout;
    o.store = std::make_shared<TCPStore>("127.0.0.1", port, std::nullopt, false,
                                         std::chrono::seconds(20));
    init_process_group(o);
  }
};

// Rank r's input: small integers (exact in every dtype), signed ones partly negative.
inline Tensor input_of(int rank, ScalarType dtype, int64_t n = 13) {
  Tensor v = (arange(n, TensorOptions(kInt64)) * 7 + rank * 3).remainder(11);
  if (dtype == kBool) return v.remainder(2).to(kBool);
  if (is_floating_point(dtype) || dtype == kInt8 || dtype == kInt16 || dtype == kInt32 ||
      dtype == kInt64)
    v = v - 5;
  return v.to(dtype);
}

}  // namespace kiln::distributed::testing
