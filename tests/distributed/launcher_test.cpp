// `kiln run`: environment, prefixed output, failure handling and restarts, and the DDP example.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/distributed/ranks.h"

namespace {

using Result = kiln::distributed::testing::CommandResult;

// Runs `kiln run args`; the flight recorders of failing ranks write to a directory of the test's.
Result run(const std::string& args) {
  const std::filesystem::path dumps =
      std::filesystem::temp_directory_path() / ("kiln_launcher_fr_" + std::to_string(getpid()));
  const Result r = kiln::distributed::testing::run_command(
      "KILN_FR_DUMP_DIR=" + dumps.string() + " " + KILN_CLI + " run --stop-grace 2 " + args);
  std::filesystem::remove_all(dumps);
  return r;
}

bool has(const Result& r, const std::string& text) {
  return r.output.find(text) != std::string::npos;
}

TEST(Launcher, StartsTheRanksAndPrefixesTheirOutput) {
  const Result r = run("-n 3 " + std::string(KILN_RUN_PROBE));
  EXPECT_EQ(r.status, 0) << r.output;
  for (int rank = 0; rank < 3; ++rank)
    EXPECT_TRUE(has(r, "[rank" + std::to_string(rank) + "]: rank " + std::to_string(rank) +
                           " of 3 local_rank " + std::to_string(rank) + " sum 6 restart 0\n"))
        << r.output;
}

TEST(Launcher, AFailedRankStopsTheOthersAndGivesItsExitCode) {
  const Result r = run("-n 2 " + std::string(KILN_RUN_PROBE) + " --fail-rank 1");
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_TRUE(has(r, "[rank1]: failing on purpose\n")) << r.output;
  EXPECT_TRUE(has(r, "[rank1]: partial line without a newline\n")) << r.output;
  EXPECT_TRUE(has(r, "kiln run: rank 1 exited with code 3; the other ranks were stopped"))
      << r.output;
}

TEST(Launcher, RestartsTheJobAfterAFailure) {
  const Result r = run("-n 2 --max-restarts 2 " + std::string(KILN_RUN_PROBE) +
                       " --fail-rank 0 --fail-before-restart 1");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r, "kiln run: restarting all 2 ranks (restart 1 of 2)")) << r.output;
  EXPECT_TRUE(has(r, "[rank1]: rank 1 of 2 local_rank 1 sum 3 restart 1\n")) << r.output;
}

TEST(Launcher, GivesUpAfterMaxRestarts) {
  const Result r = run("-n 2 --max-restarts 1 " + std::string(KILN_RUN_PROBE) + " --fail-rank 1");
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_TRUE(has(r, "kiln run: giving up after 1 restart(s)")) << r.output;
}

TEST(Launcher, ReportsAProgramThatCannotStart) {
  const Result r = run("-n 2 /nonexistent/program");
  EXPECT_EQ(r.status, 127) << r.output;
  EXPECT_TRUE(has(r, "cannot run '/nonexistent/program'")) << r.output;
}

// examples/ddp_gpt on 2 ranks: rank 1 crashes at step 30, the job restarts from the checkpoint
// of step 20 and finishes with identical replicas and a lower loss.
TEST(Launcher, TrainsTheGptWithDdpAndResumesAfterACrash) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kiln_ddp_gpt_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const Result r = run("-n 2 --max-restarts 1 " + std::string(KILN_DDP_GPT) +
                       " --steps 40 --batch 16 --save-every 20 --crash-at 30 --checkpoint " +
                       (dir / "ckpt").string());
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r, "[rank1]: crashing at step 30 on purpose")) << r.output;
  EXPECT_TRUE(has(r, "[rank0]: resumed from ")) << r.output;
  EXPECT_TRUE(has(r, "largest parameter difference between ranks 0\n")) << r.output;
}

// examples/tp_mlp at 2 ranks (tensor parallel) and 4 (a 2 x 2 mesh: data and tensor parallel).
TEST(Launcher, TrainsTheTensorParallelMlp) {
  for (const char* n : {"2", "4"}) {
    const Result r = run(std::string("-n ") + n + " " + KILN_TP_MLP + " --steps 300");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(has(r, std::string("[rank0]: mesh ") + (n[0] == '2' ? "1 x 2" : "2 x 2")))
        << r.output;
  }
}

}  // namespace
