// The flight recorder: what it records, its dumps on failure and on SIGUSR1, and `kiln fr`
// naming the rank that a job waits for.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "kiln/distributed/flight_recorder.h"
#include "tests/distributed/ranks.h"

namespace kiln::distributed {
namespace {

namespace fs = std::filesystem;
using testing::expect_all_passed;
using testing::kExpectedExit;
using testing::Rendezvous;
using testing::require;
using testing::require_error;
using testing::run_ranks;

constexpr int kWorld = 3;

// A fresh directory for one test's dumps, removed afterwards.
struct DumpDir {
  fs::path path = fs::temp_directory_path() /
                  ("kiln_fr_test_" + std::to_string(getpid()) + "_" +
                   std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  DumpDir() { fs::create_directories(path); }
  ~DumpDir() { fs::remove_all(path); }
};

// Runs body(rank) on `world` ranks whose recorders dump into `dir` and whose collectives time
// out after `timeout`; returns each rank's exit status.
std::vector<int> run_recorded(const DumpDir& dir, const std::function<void(int)>& body,
                              std::chrono::seconds timeout = std::chrono::seconds(20),
                              int world = kWorld) {
  const Rendezvous rv;
  return run_ranks(world, [&](int rank) {
    setenv("KILN_FR_DUMP_DIR", dir.path.c_str(), 1);
    rv.init(rank, world, timeout);
    body(rank);
  });
}

// A rank that stalls for `stall`, then gets SIGUSR1, as an operator would send it to see where
// the rank is, and gives its recorder time to write.
void stall_then_dump(std::chrono::seconds stall) {
  std::this_thread::sleep_for(stall);
  raise(SIGUSR1);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
}

testing::CommandResult kiln_fr(const fs::path& dir) {
  return testing::run_command(std::string(KILN_CLI) + " fr " + dir.string());
}

// `kiln fr` on `dir` says `what` and names `culprit`.
void expect_report(const fs::path& dir, const std::string& what, int culprit) {
  const auto report = kiln_fr(dir);
  EXPECT_EQ(report.status, 1) << report.output;
  EXPECT_NE(report.output.find(what), std::string::npos) << report.output;
  EXPECT_NE(report.output.find("culprit: rank " + std::to_string(culprit) + "\n"),
            std::string::npos)
      << report.output;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every rank but `victim` expects its next all_reduce to fail, within `limit`, with an error
// that names the collective and the dump.
void expect_failure_within(const Tensor& t, std::chrono::seconds limit) {
  const auto start = std::chrono::steady_clock::now();
  try {
    all_reduce(t);
  } catch (const Error& e) {
    const auto took = std::chrono::steady_clock::now() - start;
    const std::string m = e.what();
    require(m.find("all_reduce on group 'default'") != std::string::npos &&
                m.find("flight recorder written to") != std::string::npos,
            "message: ", m);
    require(took < limit, "the error took ",
            std::chrono::duration_cast<std::chrono::milliseconds>(took).count(), " ms");
    return;
  }
  require(false, "no error although a rank is gone");
}

TEST(FlightRecorder, RecordsCollectivesAndDumpsOnSigusr1) {
  const DumpDir dir;
  expect_all_passed(run_recorded(
      dir,
      [&](int rank) {
        Tensor t = ones({4});
        all_reduce(t);
        broadcast(t, 0);
        barrier();
        raise(SIGUSR1);
        const fs::path file = dir.path / ("kiln_fr_rank" + std::to_string(rank) + ".json");
        for (int i = 0; i < 500 && !fs::exists(file); ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        const std::string text = read_text(file);
        for (const char* want :
             {"\"rank\": ", "\"reason\": \"SIGUSR1\"", "\"op\": \"connect\"",
              "\"collective_seq_id\": 1, \"p2p_seq_id\": 0, \"op\": \"all_reduce\", "
              "\"input_sizes\": [[4]], \"input_dtypes\": [\"float32\"], \"output_sizes\": [[4]]",
              "\"collective_seq_id\": 2, \"p2p_seq_id\": 0, \"op\": \"broadcast\"",
              "\"op\": \"barrier\"", "\"state\": \"completed\"", "\"frames\": [\""})
          require(text.find(want) != std::string::npos, "the dump lacks ", want, ":\n", text);
        barrier();
        destroy_process_group();
      },
      std::chrono::seconds(20), 2));
  const auto r = kiln_fr(dir.path);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("group 'default': all 2 ranks completed collectives #0 to #3 alike"),
            std::string::npos)
      << r.output;
}

// Every rank all-reduces once; then `victim` runs `fate` (which ends its process) while the
// others expect their next all_reduce to fail within `limit`.
void run_with_victim(const DumpDir& dir, int victim, std::chrono::seconds timeout,
                     std::chrono::seconds limit, const std::function<void()>& fate) {
  const auto status = run_recorded(
      dir,
      [&](int rank) {
        Tensor t = ones({8});
        all_reduce(t);
        if (rank == victim) fate();
        expect_failure_within(t, limit);
      },
      timeout);
  for (int r = 0; r < kWorld; ++r)
    EXPECT_EQ(status[r], r == victim ? kExpectedExit : 0) << "rank " << r;
}

TEST(FlightRecorder, ADeadRankFailsTheOthersWithinTheTimeoutAndIsNamed) {
  const DumpDir dir;
  // Rank 1 dies without a word, as a crash.
  run_with_victim(dir, 1, std::chrono::seconds(5), std::chrono::seconds(7),
                  [] { _exit(kExpectedExit); });
  expect_report(dir.path, "no dump from rank(s) 1", 1);
}

TEST(FlightRecorder, AStalledRankTimesTheOthersOutAndTheyNameIt) {
  const DumpDir dir;
  // Rank 2 stalls in its own work, never calling the next collective; then an operator sends it
  // SIGUSR1 to see where it is.
  run_with_victim(dir, 2, std::chrono::seconds(2), std::chrono::seconds(4), [] {
    stall_then_dump(std::chrono::seconds(4));
    _exit(kExpectedExit);
  });
  expect_report(
      dir.path,
      "collective #2: rank(s) 0, 1 called all_reduce [[8]] [float32]; rank(s) 2 never did", 2);
}

TEST(FlightRecorder, KilnFrNamesTheRankThatCalledADifferentCollective) {
  const DumpDir dir;
  expect_all_passed(run_recorded(dir, [&](int rank) {
    Tensor t = ones({4});
    all_reduce(t);
    Tensor other = ones({rank == 2 ? 5 : 4});
    // Every rank fails the agreement check, and dumps.
    require_error([&] { all_reduce(other); }, {"all_reduce: the ranks of group 'default'"});
  }));
  expect_report(dir.path, "rank(s) 2: all_reduce [[5]] [float32]", 2);
}

TEST(FlightRecorder, KilnFrNamesTheRankAReceiveWaitsFor) {
  const DumpDir dir;
  expect_all_passed(run_recorded(
      dir,
      [&](int rank) {
        Tensor t = ones({4});
        if (rank == 0) {
          send(t, 1);
          stall_then_dump(std::chrono::seconds(3));  // never sends the second
          return;
        }
        recv(t, 0);
        require_error([&] { recv(t, 0); }, {"recv: ", "from rank 0"});
      },
      std::chrono::seconds(2), 2));
  expect_report(dir.path,
                "messages from rank 0 to rank 1: rank 1's recv 2 ([[4]] [float32]) is failed; "
                "rank 0 never sent it",
                0);
}

TEST(FlightRecorder, KilnFrRejectsAnEmptyDirectory) {
  const DumpDir dir;
  const auto report = kiln_fr(dir.path);
  EXPECT_EQ(report.status, 2) << report.output;
  EXPECT_NE(report.output.find("no flight recorder dumps"), std::string::npos) << report.output;
}

}  // namespace
}  // namespace kiln::distributed
