// Note [Atomic writes]: the data goes to a temporary file in the target's directory, which is
// fsync'ed and renamed over the target; the directory is fsync'ed after. rename() replaces the
// target atomically, so readers see the old file or the complete new one. What a writer that is
// killed (SIGKILL, the OOM killer, a crash) leaves behind:
//  - Where Linux offers it (O_TMPFILE: ext4, xfs, btrfs, tmpfs, ...), the temporary file has no
//    name while it is written, and the kernel frees it when its writer dies. On commit it is
//    linked as <path>.tmp.<pid>.<n> and renamed over the target at once, so a name exists only
//    between those two system calls.
//  - Elsewhere (or when /proc is missing, which linking an unnamed file needs without
//    CAP_DAC_READ_SEARCH) the named temporary is created up front.
// Either way, the writer holds an flock on its temporary file until it is renamed, and every
// writer first removes the temporaries of its target whose flock is free and whose pid is not a
// live process: only a dead writer's file passes both tests (a live writer holds its lock, and
// the pid test covers the moment between creating a file and locking it; locks also work across
// the hosts of a network file system, where pids mean nothing). Temporaries of older Kiln
// versions, which took no lock, are removed by the pid test alone.
#include "kiln/io/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "kiln/core/error.h"

namespace kiln::io {
namespace {

std::atomic<bool> g_unnamed_temporaries{true};

std::string directory_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

std::string temp_name(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

// The pid in a name "<base>.tmp.<pid>.<n>", or 0 when `name` is not such a name.
pid_t temp_owner(std::string_view name, std::string_view base) {
  const std::string_view tag = ".tmp.";
  if (name.size() <= base.size() + tag.size() || !name.starts_with(base) ||
      name.substr(base.size(), tag.size()) != tag) {
    return 0;
  }
  std::string_view rest = name.substr(base.size() + tag.size());
  size_t dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == rest.size()) return 0;
  pid_t pid = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + dot, pid);
  if (ec != std::errc() || end != rest.data() + dot || pid <= 0) return 0;
  for (char c : rest.substr(dot + 1)) {
    if (c < '0' || c > '9') return 0;
  }
  return pid;
}

std::string proc_fd_path(int fd) {
  std::string s = "/proc/self/fd/";
  s += std::to_string(fd);
  return s;
}

bool process_is_gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

// An unnamed file in `dir` that can be linked into it later, or -1.
int open_unnamed(const std::string& dir) {
#ifdef O_TMPFILE
  if (!g_unnamed_temporaries.load()) return -1;
  int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  if (fd < 0) return -1;
  const std::string proc = proc_fd_path(fd);
  if (::access(proc.c_str(), F_OK) != 0) {  // linking may need /proc: take the named path
    ::close(fd);
    return -1;
  }
  return fd;
#else
  (void)dir;
  return -1;
#endif
}

// Gives the unnamed file `fd` the name `name`; false with errno set on failure.
bool link_unnamed(int fd, const std::string& name) {
  if (::linkat(fd, "", AT_FDCWD, name.c_str(), AT_EMPTY_PATH) == 0) return true;
  if (errno == EEXIST) return false;
  const std::string proc = proc_fd_path(fd);  // without CAP_DAC_READ_SEARCH
  return ::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0;
}

void fsync_directory(const std::string& dir) {
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;  // the rename already happened; durability of the entry is best effort
  ::fsync(dfd);
  ::close(dfd);
}

}  // namespace

namespace detail {

void set_unnamed_temporaries(bool enabled) { g_unnamed_temporaries.store(enabled); }

size_t reclaim_stale_temporaries(const std::string& path) {
  const std::string base = std::filesystem::path(path).filename().string();
  if (base.empty()) return 0;
  DIR* dir = ::opendir(directory_of(path).c_str());
  if (!dir) return 0;
  size_t removed = 0;
  const int dfd = ::dirfd(dir);
  while (const dirent* ent = ::readdir(dir)) {
    const pid_t pid = temp_owner(ent->d_name, base);
    if (pid == 0 || pid == ::getpid() || !process_is_gone(pid)) continue;
    int fd = ::openat(dfd, ent->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) continue;
    struct stat open_st, named_st;
    // Remove it only if it is a regular file, nobody holds its lock, and the name still refers to
    // the file that was locked.
    if (::fstat(fd, &open_st) == 0 && S_ISREG(open_st.st_mode) &&
        ::flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        ::fstatat(dfd, ent->d_name, &named_st, AT_SYMLINK_NOFOLLOW) == 0 &&
        named_st.st_ino == open_st.st_ino && named_st.st_dev == open_st.st_dev &&
        ::unlinkat(dfd, ent->d_name, 0) == 0) {
      ++removed;
    }
    ::close(fd);
  }
  ::closedir(dir);
  return removed;
}

}  // namespace detail

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  KILN_CHECK(!path_.empty(), "save: empty file path");
  detail::reclaim_stale_temporaries(path_);
  fd_ = open_unnamed(directory_of(path_));
  if (fd_ < 0) {
    for (int attempt = 0; fd_ < 0 && attempt < 100; ++attempt) {
      temp_path_ = temp_name(path_);  // EEXIST: a dead process with our pid left this name
      fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ < 0 && errno != EEXIST) break;
    }
    // Not fail(): that would unlink a path this writer did not create.
    KILN_CHECK(fd_ >= 0, "save: cannot write '", path_, "': cannot create temporary file '",
               temp_path_, "': ", std::strerror(errno));
  }
  ::flock(fd_, LOCK_EX | LOCK_NB);  // best effort: where locks fail, the pid test still holds
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void AtomicFileWriter::fail(const std::string& what, int err) {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
  KILN_FAIL("save: cannot write '", path_, "': ", what, ": ", std::strerror(err));
}

void AtomicFileWriter::write(const void* data, size_t size) {
  KILN_CHECK(fd_ >= 0 && !committed_, "save: '", path_, "': write after commit or failure");
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("write failed", errno);
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void AtomicFileWriter::commit() {
  KILN_CHECK(fd_ >= 0 && !committed_, "save: '", path_, "': commit after commit or failure");
  if (::fsync(fd_) != 0) fail("fsync failed", errno);
  if (temp_path_.empty()) {
    bool linked = false;
    for (int attempt = 0; !linked && attempt < 100; ++attempt) {
      std::string name = temp_name(path_);
      linked = link_unnamed(fd_, name);
      if (linked) temp_path_ = std::move(name);
      if (!linked && errno != EEXIST) break;
    }
    if (!linked) fail("cannot link the temporary file into its directory", errno);
  }
  // Renamed while the lock is held, so no other writer takes the file for a dead one's.
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) fail("rename into place failed", errno);
  committed_ = true;
  // The data is on disk (fsync above); an error closing the descriptor now loses nothing.
  ::close(fd_);
  fd_ = -1;
  fsync_directory(directory_of(path_));
}

}  // namespace kiln::io
