#include "kiln/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "kiln/core/error.h"

namespace kiln::io {
namespace {

std::string unique_temp_path(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

void fsync_directory_of(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;  // the rename already happened; durability of the entry is best effort
  ::fsync(dfd);
  ::close(dfd);
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  KILN_CHECK(!path_.empty(), "save: empty file path");
  temp_path_ = unique_temp_path(path_);
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  // Not fail(): that would unlink a path this writer did not create.
  KILN_CHECK(fd_ >= 0, "save: cannot write '", path_, "': cannot create temporary file '",
             temp_path_, "': ", std::strerror(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());  // no-op when fail() already removed it
}

void AtomicFileWriter::fail(const std::string& what, int err) {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  ::unlink(temp_path_.c_str());
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
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close failed", errno);
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) fail("rename into place failed", errno);
  committed_ = true;
  fsync_directory_of(path_);
}

}  // namespace kiln::io
