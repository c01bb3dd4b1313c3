#pragma once
// A fresh KILN_CACHE_DIR for one test (kernels and max-autotune choices), removed after it; the
// in-memory caches are cleared on both ends.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "kiln/compile/codegen/gemm_autotune.h"
#include "kiln/compile/codegen/kernel_cache.h"

namespace kiln {

class CacheDir {
 public:
  CacheDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("kiln-cache-test-" + std::to_string(getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::remove_all(path_);
    const char* old = std::getenv("KILN_CACHE_DIR");
    if (old) old_ = old;
    setenv("KILN_CACHE_DIR", path_.c_str(), 1);
    clear_memory();
  }
  ~CacheDir() {
    if (old_.empty())
      unsetenv("KILN_CACHE_DIR");
    else
      setenv("KILN_CACHE_DIR", old_.c_str(), 1);
    unsetenv("KILN_CACHE_MAX_MB");
    clear_memory();
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  CacheDir(const CacheDir&) = delete;
  CacheDir& operator=(const CacheDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  // The generated kernels' shared objects.
  std::vector<std::filesystem::path> objects() const {
    std::vector<std::filesystem::path> out;
    for (const auto& f : std::filesystem::directory_iterator(path_ / "kernels"))
      if (f.path().extension() == ".so") out.push_back(f.path());
    return out;
  }

 private:
  static void clear_memory() {
    compiler::clear_memory_cache();
    compiler::clear_gemm_autotune_memory();
  }
  static inline int counter_ = 0;
  std::filesystem::path path_;
  std::string old_;
};

}  // namespace kiln
