#pragma once
// AtomicFileWriter: writes a file so that readers only ever see the old file or the complete new
// one, and so that a writer killed at any point leaves nothing behind that the next write of the
// same file does not remove. Data goes to a temporary file in the target's directory, which is
// fsync'ed and renamed over the target on commit(); destroying the writer without commit()
// discards it. See Note [Atomic writes] in atomic_file.cpp.
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

 private:
  [[noreturn]] void fail(const std::string& what, int err);

  std::string path_;
  std::string temp_path_;  // empty while the data is in an unnamed file (O_TMPFILE)
  int fd_ = -1;
  bool committed_ = false;
};

namespace detail {

// Removes the temporary files `<path>.tmp.<pid>.<n>` that writers of `path` which died left
// behind; returns how many. Every AtomicFileWriter calls it first; it never throws.
size_t reclaim_stale_temporaries(const std::string& path);

// For tests: whether writers may keep their data in an unnamed file (O_TMPFILE) until commit
// (default true); false makes them use a named temporary from the start, as on filesystems
// without O_TMPFILE.
void set_unnamed_temporaries(bool enabled);

}  // namespace detail
}  // namespace kiln::io
