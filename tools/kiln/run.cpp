#include "tools/kiln/run.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "kiln/distributed/tcp_store_server.h"

namespace kiln::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct RunOptions {
  int nproc = 1;
  int max_restarts = 0;
  std::chrono::milliseconds stop_grace = std::chrono::seconds(5);
  bool prefix = true;
  std::vector<std::string> command;
};

const char kUsage[] =
    "usage: kiln run [-n N | --nproc-per-node N] [--max-restarts N] [--stop-grace SECONDS]\n"
    "                [--no-prefix] PROGRAM [ARGS...]\n"
    "Starts N ranks of PROGRAM on this machine with RANK, LOCAL_RANK, WORLD_SIZE,\n"
    "LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT set (init_process_group's env://), prefixes\n"
    "their output lines with [rankR]:, and when one rank fails stops the others and restarts\n"
    "them all, up to --max-restarts times (KILN_RESTART_COUNT says which attempt it is).\n";

volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

// SIGCHLD writes a byte here, so the launcher wakes the moment a rank exits: the rank that
// failed first is reaped before the ranks that then fail because it is gone.
int g_child_pipe[2] = {-1, -1};
void on_child(int) {
  const int saved = errno;
  const char byte = 1;
  [[maybe_unused]] ssize_t n = write(g_child_pipe[1], &byte, 1);
  errno = saved;
}

int parse_count(const std::string& flag, const char* value, int min) {
  char* end = nullptr;
  errno = 0;
  const long v = value ? std::strtol(value, &end, 10) : 0;
  if (!value || *end != '\0' || errno != 0 || v < min || v > 4096) {
    std::cerr << "kiln run: " << flag << " needs an integer >= " << min << ", got '"
              << (value ? value : "") << "'\n"
              << kUsage;
    std::exit(2);
  }
  return static_cast<int>(v);
}

RunOptions parse(int argc, char** argv) {
  RunOptions o;
  int i = 0;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "-n" || a == "--nproc-per-node" || a == "--nproc_per_node") {
      o.nproc = parse_count(a, next, 1);
      ++i;
    } else if (a == "--max-restarts" || a == "--max_restarts") {
      o.max_restarts = parse_count(a, next, 0);
      ++i;
    } else if (a == "--stop-grace") {
      o.stop_grace = std::chrono::seconds(parse_count(a, next, 0));
      ++i;
    } else if (a == "--no-prefix") {
      o.prefix = false;
    } else if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (a == "--") {
      ++i;
      break;
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "kiln run: unknown option '" << a << "'\n" << kUsage;
      std::exit(2);
    } else {
      break;
    }
  }
  for (; i < argc; ++i) o.command.emplace_back(argv[i]);
  if (o.command.empty()) {
    std::cerr << "kiln run: no program to run\n" << kUsage;
    std::exit(2);
  }
  return o;
}

// One stream of one rank: its pipe and the bytes of its unfinished last line.
struct Stream {
  int fd = -1;
  FILE* sink = nullptr;
  std::string pending;
};

struct Rank {
  pid_t pid = 0;
  Stream out, err;
  int status = -1;     // exit code, 128 + signal, or -1 while running
  int exit_order = 0;  // 1 for the first rank reaped, 2 for the next, ...
};

void emit(const RunOptions& o, int rank, Stream& s, bool flush_partial) {
  size_t start = 0;
  for (size_t nl; (nl = s.pending.find('\n', start)) != std::string::npos; start = nl + 1) {
    if (o.prefix) std::fprintf(s.sink, "[rank%d]: ", rank);
    std::fwrite(s.pending.data() + start, 1, nl + 1 - start, s.sink);
  }
  s.pending.erase(0, start);
  if (flush_partial && !s.pending.empty()) {
    if (o.prefix) std::fprintf(s.sink, "[rank%d]: ", rank);
    std::fwrite(s.pending.data(), 1, s.pending.size(), s.sink);
    std::fputc('\n', s.sink);
    s.pending.clear();
  }
  std::fflush(s.sink);
}

// Reads what is there; closes the stream at end of file.
void drain(const RunOptions& o, int rank, Stream& s) {
  char buf[65536];
  for (;;) {
    const ssize_t n = read(s.fd, buf, sizeof buf);
    if (n > 0) {
      s.pending.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      close(s.fd);
      s.fd = -1;
    }
    break;  // EOF, or EAGAIN: nothing more for now
  }
  emit(o, rank, s, s.fd < 0);
}

pid_t start_rank(const RunOptions& o, int rank, uint16_t port, int restart, Rank& r) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    std::perror("kiln run: pipe");
    std::exit(1);
  }
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("kiln run: fork");
    std::exit(1);
  }
  if (pid == 0) {
    setpgid(0, 0);  // the rank and what it starts can be stopped together
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    close(out[0]);
    close(out[1]);
    close(err[0]);
    close(err[1]);
    const std::string world = std::to_string(o.nproc);
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", world.c_str(), 1);
    setenv("LOCAL_WORLD_SIZE", world.c_str(), 1);
    setenv("GROUP_RANK", "0", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
    setenv("KILN_USE_AGENT_STORE", "1", 1);
    setenv("KILN_RESTART_COUNT", std::to_string(restart).c_str(), 1);
    setenv("KILN_MAX_RESTARTS", std::to_string(o.max_restarts).c_str(), 1);
    if (o.nproc > 1) setenv("OMP_NUM_THREADS", "1", 0);  // torchrun's default: no oversubscription
    std::vector<char*> args;
    for (const std::string& a : o.command) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "kiln run: cannot run '%s': %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  close(out[1]);
  close(err[1]);
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  r.out = {out[0], stdout, {}};
  r.err = {err[0], stderr, {}};
  r.status = -1;
  r.pid = pid;
  return pid;
}

int exit_code(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

std::string describe(int status) {
  return status > 128 ? "was killed by signal " + std::to_string(status - 128)
                      : "exited with code " + std::to_string(status);
}

void reap(std::vector<Rank>& ranks) {
  int reaped = 0;
  for (const Rank& r : ranks) reaped = std::max(reaped, r.exit_order);
  for (Rank& r : ranks) {
    if (r.pid == 0 || r.status >= 0) continue;
    int s = 0;
    if (waitpid(r.pid, &s, WNOHANG) != r.pid) continue;
    r.status = exit_code(s);
    r.exit_order = ++reaped;
  }
}

bool all_finished(const std::vector<Rank>& ranks) {
  for (const Rank& r : ranks)
    if (r.status < 0 || r.out.fd >= 0 || r.err.fd >= 0) return false;
  return true;
}

// Polls the ranks' pipes for up to `wait` and prints what arrived; returns early when a rank
// exits.
void pump(const RunOptions& o, std::vector<Rank>& ranks, std::chrono::milliseconds wait) {
  std::vector<pollfd> fds = {{g_child_pipe[0], POLLIN, 0}};
  std::vector<std::pair<int, Stream*>> owners = {{-1, nullptr}};
  for (size_t i = 0; i < ranks.size(); ++i)
    for (Stream* s : {&ranks[i].out, &ranks[i].err})
      if (s->fd >= 0) {
        fds.push_back({s->fd, POLLIN, 0});
        owners.emplace_back(static_cast<int>(i), s);
      }
  if (poll(fds.data(), fds.size(), static_cast<int>(wait.count())) <= 0) return;
  if (fds[0].revents) {
    char buf[64];
    while (read(g_child_pipe[0], buf, sizeof buf) > 0) {
    }
    reap(ranks);
  }
  for (size_t k = 1; k < fds.size(); ++k)
    if (fds[k].revents) drain(o, owners[k].first, *owners[k].second);
}

// SIGTERM to every running rank's process group, SIGKILL after the grace period.
void stop_all(const RunOptions& o, std::vector<Rank>& ranks) {
  for (Rank& r : ranks)
    if (r.status < 0) kill(-r.pid, SIGTERM);
  const auto deadline = Clock::now() + o.stop_grace;
  while (!all_finished(ranks) && Clock::now() < deadline) {
    pump(o, ranks, std::chrono::milliseconds(20));
    reap(ranks);
  }
  for (Rank& r : ranks)
    if (r.status < 0) kill(-r.pid, SIGKILL);
  while (!all_finished(ranks)) {
    pump(o, ranks, std::chrono::milliseconds(20));
    reap(ranks);
  }
}

// One attempt: starts the ranks and waits for all to succeed or one to fail. Returns 0, or the
// failed rank's status with `failed` set.
int attempt(const RunOptions& o, int restart, int& failed) {
  // A fresh store per attempt: the ranks of the last one left their keys behind.
  distributed::net::TCPStoreServer store(0);
  std::vector<Rank> ranks(o.nproc);
  for (int r = 0; r < o.nproc; ++r) start_rank(o, r, store.port(), restart, ranks[r]);
  failed = -1;
  while (!all_finished(ranks)) {
    pump(o, ranks, std::chrono::milliseconds(50));
    reap(ranks);
    if (g_signal != 0) {
      std::cerr << "kiln run: got signal " << g_signal << "; stopping the ranks\n";
      stop_all(o, ranks);
      return 128 + g_signal;
    }
    for (int r = 0; r < o.nproc; ++r)
      if (ranks[r].status > 0 && (failed < 0 || ranks[r].exit_order < ranks[failed].exit_order))
        failed = r;
    if (failed >= 0) {
      const int status = ranks[failed].status;
      stop_all(o, ranks);
      std::cerr << "kiln run: rank " << failed << " " << describe(status)
                << "; the other ranks were stopped";
      // Ranks that failed on their own (not by the launcher's signals), often because of it.
      for (int r = 0; r < o.nproc; ++r)
        if (r != failed && ranks[r].status > 0 && ranks[r].status != 128 + SIGTERM &&
            ranks[r].status != 128 + SIGKILL)
          std::cerr << "; rank " << r << " also " << describe(ranks[r].status);
      std::cerr << "\n";
      return status;
    }
  }
  return 0;
}

}  // namespace

int run(int argc, char** argv) {
  const RunOptions o = parse(argc, argv);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  if (pipe2(g_child_pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
    std::perror("kiln run: pipe");
    return 1;
  }
  struct sigaction child {};
  child.sa_handler = on_child;
  child.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &child, nullptr);
  for (int restart = 0;; ++restart) {
    int failed = -1;
    const int status = attempt(o, restart, failed);
    if (status == 0) return 0;
    if (failed < 0 || restart >= o.max_restarts) {
      if (failed >= 0 && o.max_restarts > 0)
        std::cerr << "kiln run: giving up after " << restart << " restart(s)\n";
      return status;
    }
    std::cerr << "kiln run: restarting all " << o.nproc << " ranks (restart " << restart + 1
              << " of " << o.max_restarts << ")\n";
  }
}

}  // namespace kiln::cli
