#include "kiln/compile/codegen/kernel_cache.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <list>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "kiln/compile/codegen/embedded_headers.h"
#include "kiln/compile/codegen/prebuilt_kernels.h"
#include "kiln/compile/codegen/text_hash.h"
#include "kiln/compile/logs.h"
#include "kiln/core/error.h"

namespace fs = std::filesystem;

namespace kiln::compiler {
namespace {

constexpr size_t kMemoryEntries = 256;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// A name for a temporary file beside `path`, unique to this process and call.
fs::path temporary(const fs::path& path) {
  static std::atomic<int> counter{0};
  return path.string() + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
}

// Writes `text` to `path` through a temporary file and a rename, so readers never see half of it.
void write_atomically(const fs::path& path, std::string_view text) {
  const fs::path tmp = temporary(path);
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    KILN_CHECK(out.good(), "compile: cannot write ", tmp.string());
  }
  fs::rename(tmp, path);
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

struct Toolchain {
  std::string cxx;
  std::string identity;  // what `cxx --version` prints
};

// The compiler (KILN_CXX, read on each build) and its identity, asked once per compiler.
Toolchain toolchain() {
  static std::mutex mu;
  static std::unordered_map<std::string, std::string> identities;
  Toolchain tc;
  tc.cxx = env_or("KILN_CXX", KILN_DEFAULT_CXX);
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = identities.try_emplace(tc.cxx);
  if (fresh) {
    if (FILE* p = popen((quote(tc.cxx) + " --version 2>/dev/null").c_str(), "r")) {
      char buf[256];
      while (std::fgets(buf, sizeof(buf), p)) it->second += buf;
      if (pclose(p) != 0) it->second.clear();
    }
  }
  tc.identity = it->second;
  KILN_CHECK(!tc.identity.empty(), "compile: the C++ compiler \"", tc.cxx,
             "\" does not run (`--version` failed); install it, set KILN_CXX to a working one, or "
             "use CompileOptions().backend(\"eager\")");
  return tc;
}

// The options of each level: the target options isa_expand.h gives the eager kernels and the
// vector width vec_math.inc is compiled at. Like the library, no contraction of a * b + c into
// an FMA (eager's numbers exactly).
std::string flags_for(cpu::CpuCapability level) {
  std::string f =
      "-std=c++20 -O3 -ffp-contract=off -fPIC -fvisibility=hidden -w -mavx2 -mfma -mf16c -mbmi "
      "-mbmi2 -mlzcnt -mpopcnt -mprfchw";
  if (level >= cpu::CpuCapability::Avx512)
    f += " -mavx512f -mavx512bw -mavx512vl -mavx512dq -mprefer-vector-width=512";
  if (level >= cpu::CpuCapability::Avx512Bf16) f += " -mavx512bf16 -mavx512vnni";
  f += level == cpu::CpuCapability::Avx2 ? " -DKILN_VEC_BITS=256" : " -DKILN_VEC_BITS=512";
  f += level == cpu::CpuCapability::Avx512Bf16 ? " -DKILN_VEC_BF16=1" : " -DKILN_VEC_BF16=0";
  return f;
}

// Runs a shell command with its output in `log`; true on success.
bool run(const std::string& cmd, const fs::path& log) {
  return std::system((cmd + " > " + quote(log.string()) + " 2>&1").c_str()) == 0;
}

// A precompiled kernel_prelude.h for GCC, built once per compiler, flags and headers: it makes
// a unit's compile several times faster (the prelude's headers are most of its text). An
// empty path when there is none (another compiler, or the build failed: units then compile
// without it).
fs::path pch_dir(const fs::path& cache, const Toolchain& tc, const std::string& flags,
                 const fs::path& inc) {
  if (tc.identity.find("Free Software Foundation") == std::string::npos) return {};  // not GCC
  const fs::path dir =
      cache / ("pch-" + hex(fnv1a(tc.cxx + tc.identity + flags + inc.filename().string())));
  const fs::path gch = dir / "kiln/compile/codegen/kernel_prelude.h.gch";
  std::error_code ec;
  if (fs::exists(gch, ec)) return dir;
  fs::create_directories(gch.parent_path());
  const fs::path tmp = temporary(gch);
  const std::string cmd = quote(tc.cxx) + " " + flags + " -x c++-header -I" + quote(inc.string()) +
                          " " + quote((inc / "kiln/compile/codegen/kernel_prelude.h").string()) +
                          " -o " + quote(tmp.string());
  if (!run(cmd, dir / "build.log")) {
    fs::remove(tmp, ec);
    log(LogKind::Perf, "no precompiled header (see " + (dir / "build.log").string() + ")");
    return {};
  }
  fs::rename(tmp, gch);
  log(LogKind::Perf, "precompiled the kernels' header into " + gch.string());
  return dir;
}

// The embedded headers, written under the cache directory in a folder named by their hash
// (checked once per process and directory; a damaged header is rewritten).
fs::path include_dir(const fs::path& cache) {
  static const std::string name = [] {
    uint64_t h = fnv1a(KILN_VERSION_STRING);
    for (const auto& e : embedded_headers()) h = fnv1a(e.text, fnv1a(e.path, h));
    return "include-" + hex(h);
  }();
  static std::mutex mu;
  static std::vector<fs::path> checked;
  const fs::path d = cache / name;
  std::lock_guard<std::mutex> lock(mu);
  if (std::find(checked.begin(), checked.end(), d) != checked.end()) return d;
  for (const auto& e : embedded_headers()) {
    const fs::path p = d / std::string(e.path);
    std::error_code ec;
    if (fs::exists(p, ec) && read_file(p) == e.text) continue;
    fs::create_directories(p.parent_path());
    write_atomically(p, e.text);
  }
  checked.push_back(d);
  return d;
}

struct Cache {
  std::mutex mu;
  std::list<std::pair<std::string, std::shared_ptr<SharedObject>>> lru;  // most recent first
  std::unordered_map<std::string, decltype(lru)::iterator> index;
  // Units being loaded or compiled: a second caller waits for the first instead of compiling
  // again; different units compile in parallel.
  std::unordered_map<std::string, std::shared_future<std::shared_ptr<SharedObject>>> in_flight;
  CacheStats stats;

  void count(int64_t CacheStats::*field, int64_t by = 1) {
    std::lock_guard<std::mutex> lock(mu);
    stats.*field += by;
  }
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: objects may be released at exit
  return *c;
}

int64_t max_bytes() {
  const std::string mb = env_or("KILN_CACHE_MAX_MB", "1024");
  char* end = nullptr;
  const long long v = std::strtoll(mb.c_str(), &end, 10);
  KILN_CHECK(end && *end == '\0' && v >= 0,
             "compile: KILN_CACHE_MAX_MB must be a whole number of "
             "megabytes, got \"",
             mb, "\"");
  return static_cast<int64_t>(v) * 1024 * 1024;
}

// Removes the least recently used entries until the kernels directory fits the limit.
int64_t evict(const fs::path& dir, const std::string& keep) {
  struct Entry {
    fs::file_time_type used;
    std::string key;
    int64_t bytes = 0;
  };
  std::unordered_map<std::string, Entry> entries;
  int64_t total = 0;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(dir, ec)) {
    const std::string name = f.path().filename().string();
    const std::string key = name.substr(0, name.find('.'));
    if (name.find(".tmp.") != std::string::npos) continue;  // being written
    const auto size = static_cast<int64_t>(f.file_size(ec));
    Entry& e = entries[key];
    e.key = key;
    e.bytes += size;
    total += size;
    if (f.path().extension() == ".so") e.used = f.last_write_time(ec);
  }
  const int64_t limit = max_bytes();
  if (total <= limit) return 0;
  std::vector<Entry> order;
  for (auto& [k, e] : entries)  // entries without a shared object are still being built
    if (k != keep && e.used != fs::file_time_type{}) order.push_back(e);
  std::sort(order.begin(), order.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  int64_t removed = 0;
  for (const Entry& e : order) {
    if (total <= limit) break;
    for (const char* ext : {".so", ".cpp", ".sum", ".log"}) fs::remove(dir / (e.key + ext), ec);
    total -= e.bytes;
    ++removed;
  }
  return removed;
}

std::shared_ptr<SharedObject> open(const fs::path& so) {
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return nullptr;
  return std::make_shared<SharedObject>(h, so.string());
}

// The checksum file's text for a shared object's bytes.
std::string checksum(const std::string& bytes) {
  return std::to_string(bytes.size()) + " " + hex(fnv1a(bytes)) + "\n";
}

}  // namespace

SharedObject::~SharedObject() {
  if (handle_) dlclose(handle_);
}

void* SharedObject::symbol(const std::string& name) const {
  void* s = nullptr;
  if (handle_) {
    s = dlsym(handle_, name.c_str());
  } else if (auto it = symbols_.find(name); it != symbols_.end()) {
    s = it->second;
  }
  KILN_CHECK(s != nullptr, "compile: generated kernel ", name, " is missing from ", path_);
  return s;
}

std::string cache_dir() {
  if (const char* d = std::getenv("KILN_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/kiln";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/kiln";
  return (fs::temp_directory_path() / "kiln-cache").string();
}

CacheStats cache_stats() {
  std::lock_guard<std::mutex> lock(cache().mu);
  return cache().stats;
}

void clear_memory_cache() {
  std::lock_guard<std::mutex> lock(cache().mu);
  cache().lru.clear();
  cache().index.clear();
}

namespace {

// The shared object of unit `key` from the disk cache, or compiled now (no lock held: other
// units load and compile meanwhile).
std::shared_ptr<SharedObject> load_or_build(Cache& c, const std::string& key,
                                            const std::string& source, const Toolchain& tc,
                                            const std::string& flags, const fs::path& inc) {
  const fs::path dir = fs::path(cache_dir()) / "kernels";
  fs::create_directories(dir);
  const fs::path so = dir / (key + ".so"), sum = dir / (key + ".sum"), src = dir / (key + ".cpp");
  std::error_code ec;
  if (fs::exists(so, ec) && fs::exists(sum, ec)) {
    std::shared_ptr<SharedObject> obj;
    if (read_file(sum) == checksum(read_file(so))) obj = open(so);
    if (obj) {
      c.count(&CacheStats::disk_hits);
      fs::last_write_time(so, fs::file_time_type::clock::now(), ec);  // recently used
      log(LogKind::Perf, "kernel cache hit on disk: " + so.string());
      return obj;
    }
    c.count(&CacheStats::rebuilt);
    log(LogKind::Perf, "kernel cache entry " + so.string() + " is damaged; rebuilding it");
  }
  write_atomically(src, source);
  const fs::path tmp = temporary(so);
  const fs::path log_path = temporary(dir / (key + ".log"));
  const fs::path pch = pch_dir(cache_dir(), tc, flags, inc);
  const std::string cmd =
      quote(tc.cxx) + " " + flags + " -shared" + (pch.empty() ? "" : " -I" + quote(pch.string())) +
      " -I" + quote(inc.string()) + " " + quote(src.string()) + " -o " + quote(tmp.string());
  const bool ok = run(cmd, log_path);
  c.count(&CacheStats::compiles);
  const std::string message = ok ? "" : read_file(log_path);
  fs::remove(log_path, ec);
  if (!ok) {
    fs::remove(tmp, ec);
    KILN_FAIL("compile: the C++ compiler failed on generated code (kept at ", src.string(), "):\n",
              message, "command: ", cmd);
  }
  const std::string bytes = read_file(tmp);
  fs::rename(tmp, so);
  write_atomically(sum, checksum(bytes));
  std::shared_ptr<SharedObject> obj = open(so);
  KILN_CHECK(obj != nullptr, "compile: cannot load generated kernels ", so.string(), ": ",
             dlerror());
  log(LogKind::Perf, "compiled generated kernels into " + so.string());
  c.count(&CacheStats::evicted, evict(dir, key));
  return obj;
}

}  // namespace

KernelBuild kernel_build(cpu::CpuCapability level) {
  const Toolchain tc = toolchain();
  KernelBuild b;
  b.cxx = tc.cxx;
  b.flags = flags_for(level);
  const fs::path inc = include_dir(cache_dir());
  b.include_dir = inc.string();
  b.pch_dir = pch_dir(cache_dir(), tc, b.flags, inc).string();
  return b;
}

std::shared_ptr<SharedObject> load_kernels(const std::string& source, cpu::CpuCapability level) {
  if (const PrebuiltKernels* prebuilt = active_prebuilt_kernels()) return prebuilt->load(source);
  const Toolchain tc = toolchain();
  const std::string flags = flags_for(level);
  const fs::path inc = include_dir(cache_dir());
  const std::string id = tc.cxx + "\n" + tc.identity + flags + "\n" + inc.filename().string();
  const std::string key = hex(fnv1a(source, fnv1a(id))) + hex(fnv1a(id, fnv1a(source)));

  Cache& c = cache();
  std::unique_lock<std::mutex> lock(c.mu);
  if (auto it = c.index.find(key); it != c.index.end()) {
    c.lru.splice(c.lru.begin(), c.lru, it->second);
    ++c.stats.memory_hits;
    return it->second->second;
  }
  if (auto it = c.in_flight.find(key); it != c.in_flight.end()) {
    ++c.stats.memory_hits;  // shared with the caller building it
    auto pending = it->second;
    lock.unlock();
    return pending.get();
  }
  std::promise<std::shared_ptr<SharedObject>> promise;
  c.in_flight.emplace(key, promise.get_future().share());
  lock.unlock();
  std::shared_ptr<SharedObject> obj;
  try {
    obj = load_or_build(c, key, source, tc, flags, inc);
  } catch (...) {
    lock.lock();
    c.in_flight.erase(key);
    promise.set_exception(std::current_exception());
    throw;
  }
  lock.lock();
  c.in_flight.erase(key);
  c.lru.emplace_front(key, obj);
  c.index[key] = c.lru.begin();
  if (c.lru.size() > kMemoryEntries) {
    c.index.erase(c.lru.back().first);
    c.lru.pop_back();
  }
  promise.set_value(obj);
  return obj;
}

}  // namespace kiln::compiler
