#pragma once
// AtomicFileWriter: writes a file so that readers only ever see the old file or the complete new
// one. Data goes to a temporary file in the target's directory, which is fsync'ed and renamed
// over the target on commit(); destroying the writer without commit() removes the temporary file.
#include <cstddef>
#include <string>

namespace kiln::io {

class AtomicFileWriter {
 public:
  // Creates the temporary file; throws kiln::Error (naming `path`) when it cannot be created.
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t size);
  // Flushes to disk and renames into place. Throws on failure (the target is left unchanged).
  void commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  [[noreturn]] void fail(const std::string& what, int err);

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace kiln::io
