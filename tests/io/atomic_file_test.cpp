// Writers killed mid-save: the target is the old file or the complete new one, and nothing is left
// behind that the next save does not remove (Note [Atomic writes] in kiln/io/atomic_file.cpp).
#include "kiln/io/atomic_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kiln/io/safetensors.h"
#include "kiln/ops/creation.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) /
                 ("kiln_io_atomic_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Whether process `pid` has a file open inside `dir` (named, or unnamed: "dir/#123 (deleted)").
bool has_file_open_in(pid_t pid, const fs::path& dir) {
  std::error_code ec;
  for (const auto& fd : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::string target = fs::read_symlink(fd.path(), ec).string();
    if (!ec && target.starts_with(dir.string() + "/")) return true;
  }
  return false;
}

// A pid that belonged to a process which has exited and been reaped.
pid_t dead_pid() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

// 64 tensors of 1 MiB: a save that takes long enough to be killed in the middle.
std::map<std::string, Tensor> big_checkpoint(double value) {
  std::map<std::string, Tensor> tensors;
  for (int i = 0; i < 64; ++i) {
    tensors["layer" + std::to_string(i)] = kiln::full({256 * 1024}, value, TensorOptions(kFloat32));
  }
  return tensors;
}

// Forks a child that saves a new version of `path` and SIGKILLs it while its file is open; then
// checks the target and that one more save leaves only the target in the directory.
void kill_writer_mid_save(bool unnamed_temporaries) {
  fs::path dir = fresh_dir(unnamed_temporaries ? "killed_unnamed" : "killed_named");
  const std::string path = (dir / "model.safetensors").string();
  io::save_safetensors({{"old", kiln::ones({3})}}, path);
  auto next = big_checkpoint(2.0);

  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    io::detail::set_unnamed_temporaries(unnamed_temporaries);
    io::save_safetensors(next, path);  // the public save path, as a training loop calls it
    ::_exit(0);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!has_file_open_in(child, dir) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the writer finished before it could be killed";

  // The target is the old file (or, had the writer finished, the complete new one).
  auto seen = io::load_safetensors(path);
  EXPECT_TRUE(seen.tensors.count("old") == 1 || seen.tensors.size() == next.size());
  if (!unnamed_temporaries) {
    // The dead writer's named temporary is still there until the next save.
    EXPECT_EQ(names_in(dir).size(), 2u);
  }

  io::save_safetensors({{"new", kiln::zeros({2})}}, path);
  EXPECT_EQ(names_in(dir), std::vector<std::string>{"model.safetensors"});
  EXPECT_EQ(io::load_safetensors(path).tensors.count("new"), 1u);
  fs::remove_all(dir);
}

TEST(AtomicFileKill, KilledWriterLeavesNothingBehind) { kill_writer_mid_save(true); }

TEST(AtomicFileKill, KilledWriterOfNamedTemporaryIsReclaimedByNextSave) {
  kill_writer_mid_save(false);
}

TEST(AtomicFileKill, OnlyDeadWritersTemporariesAreReclaimed) {
  fs::path dir = fresh_dir("reclaim");
  const std::string path = (dir / "ckpt.safetensors").string();
  const std::string dead = std::to_string(dead_pid());
  const std::string live = std::to_string(::getpid());
  for (const std::string& name :
       {"ckpt.safetensors.tmp." + dead + ".0", "ckpt.safetensors.tmp." + dead + ".17",
        "ckpt.safetensors.tmp." + live + ".3",   // a live process
        "other.safetensors.tmp." + dead + ".0",  // another file's
        "ckpt.safetensors.tmp.x" + dead + ".0",  // not the pattern
        "ckpt.safetensors.tmp." + dead, "ckpt.safetensors.tmp." + dead + ".1.bak"}) {
    std::ofstream(dir / name) << "partial";
  }
  // A temporary whose name says its pid is dead, but whose lock a live process holds (a writer on
  // another host, or in another pid namespace) is not touched.
  const std::string locked = "ckpt.safetensors.tmp." + dead + ".5";
  std::ofstream(dir / locked) << "partial";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t holder = ::fork();
  if (holder == 0) {
    int fd = ::open((dir / locked).c_str(), O_RDONLY);
    ::flock(fd, LOCK_EX);
    char c = 1;
    (void)!::write(ready[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  // A symbolic link with a stale name is not followed.
  fs::create_symlink(dir / "ckpt.safetensors.tmp.3.0.target",
                     dir / ("ckpt.safetensors.tmp." + dead + ".9"));
  std::ofstream(dir / "ckpt.safetensors.tmp.3.0.target") << "keep";

  EXPECT_EQ(io::detail::reclaim_stale_temporaries(path), 2u);
  auto names = names_in(dir);
  EXPECT_EQ(std::count(names.begin(), names.end(), "ckpt.safetensors.tmp." + dead + ".0"), 0);
  EXPECT_EQ(std::count(names.begin(), names.end(), "ckpt.safetensors.tmp." + dead + ".17"), 0);
  EXPECT_EQ(names.size(), 8u);

  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  // Its lock is gone with it: the next save takes the file away.
  io::save_safetensors({{"a", kiln::ones({1})}}, path);
  EXPECT_FALSE(fs::exists(dir / locked));
  fs::remove_all(dir);
}

TEST(AtomicFileKill, WriterThatThrowsLeavesNothing) {
  fs::path dir = fresh_dir("throws");
  const std::string path = (dir / "f.bin").string();
  for (bool unnamed : {true, false}) {
    io::detail::set_unnamed_temporaries(unnamed);
    {
      io::AtomicFileWriter w(path);
      w.write("abc", 3);
    }  // destroyed without commit
    EXPECT_TRUE(fs::is_empty(dir)) << unnamed;
    io::AtomicFileWriter w(path);
    w.write("abc", 3);
    w.commit();
    EXPECT_EQ(names_in(dir), std::vector<std::string>{"f.bin"});
    fs::remove(path);
  }
  io::detail::set_unnamed_temporaries(true);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln
