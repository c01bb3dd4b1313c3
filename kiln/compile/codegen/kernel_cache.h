#pragma once
// Building generated kernels and caching them (ARCHITECTURE.md §7). A unit's shared object is
// found in memory, then on disk under KILN_CACHE_DIR (default ~/.cache/kiln), and only then
// compiled, by the system C++ compiler Kiln was built with (KILN_CXX overrides it). Entries are
// keyed by a hash of the source, the compiler's identity, the flags, the embedded headers and
// Kiln's version; they are written by atomic rename (concurrent processes are safe), checked
// against a checksum when read (a damaged entry is rebuilt), and evicted least recently used
// first once the directory outgrows KILN_CACHE_MAX_MB (default 1024).
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "kiln/backend/cpu/cpu_capability.h"

namespace kiln::compiler {

// A loaded shared object; closed when the last compiled function using it is gone. Or the
// kernels of a prebuilt unit (prebuilt_kernels.h), by name, in a library someone else loaded.
class SharedObject {
 public:
  SharedObject(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  SharedObject(std::unordered_map<std::string, void*> symbols, std::string path)
      : handle_(nullptr), path_(std::move(path)), symbols_(std::move(symbols)) {}
  SharedObject(const SharedObject&) = delete;
  SharedObject& operator=(const SharedObject&) = delete;
  ~SharedObject();
  void* symbol(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  void* handle_;
  std::string path_;
  std::unordered_map<std::string, void*> symbols_;
};

struct CacheStats {
  int64_t compiles = 0;     // units this process compiled
  int64_t disk_hits = 0;    // units loaded from the disk cache
  int64_t memory_hits = 0;  // units already loaded (or being loaded) in this process
  int64_t rebuilt = 0;      // damaged disk entries found and rebuilt
  int64_t evicted = 0;      // disk entries removed to stay under the size limit
};

// The shared object of a generated unit, compiled for `level` (Note [ISA dispatch]) if needed.
// A failed compile is a kiln::Error with the compiler's message and the kept source's path.
// Under a PrebuiltKernelsScope, the unit comes from its table and no compiler runs.
std::shared_ptr<SharedObject> load_kernels(const std::string& source, cpu::CpuCapability level);

// How units are built for `level`: the compiler (checked to run), its options, the directory
// of the embedded headers (written out if needed) and of a precompiled prelude (empty if none).
// kiln aot builds a program's units into its library with them.
struct KernelBuild {
  std::string cxx, flags, include_dir, pch_dir;
};
KernelBuild kernel_build(cpu::CpuCapability level);

CacheStats cache_stats();
// The directory entries live in (KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln).
std::string cache_dir();
// Forgets the in-memory cache (loaded objects stay open while compiled functions use them).
void clear_memory_cache();

}  // namespace kiln::compiler
