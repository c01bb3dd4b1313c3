#include "kiln/backend/cuda/nvrtc_program.h"

#include <nvrtc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "kiln/compile/codegen/embedded_headers.h"
#include "kiln/compile/codegen/kernel_cache.h"
#include "kiln/compile/codegen/text_hash.h"
#include "kiln/compile/logs.h"
#include "kiln/core/error.h"

// The CUDA toolkit's include folders as CMake found them (a ';' list).
#ifndef KILN_CUDA_INCLUDE_DIR
#define KILN_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

namespace fs = std::filesystem;

namespace kiln::cuda {
namespace {

using compiler::fnv1a;
using compiler::hex;

// The host C++ headers scalar.h and half.h include, for NVRTC: libcu++'s, with their names
// brought into std (libcu++ declares them in cuda::std).
constexpr const char* kForward = "namespace std {\nusing namespace cuda::std;\n}\n";
// Under NVRTC libcu++'s <cmath> leaves these to the CUDA math library, which declares their
// float and double overloads in the global namespace.
constexpr const char* kCmath = R"(#pragma once
#include <cuda/std/cmath>
namespace std {
using namespace cuda::std;
using ::erf;
using ::erfc;
using ::fdim;
using ::fma;
using ::fmod;
using ::modf;
using ::nan;
using ::remainder;
using ::remquo;
}
)";

struct Header {
  std::string name, text;
};

const std::vector<Header>& headers() {
  static const std::vector<Header> h = [] {
    std::vector<Header> v;
    v.push_back({"cmath", kCmath});
    for (const char* n : {"cstdint", "cstring", "limits", "type_traits"})
      v.push_back({n, std::string("#pragma once\n#include <cuda/std/") + n + ">\n" + kForward});
    for (const auto& e : compiler::embedded_headers())
      v.push_back({std::string(e.path), std::string(e.text)});
    return v;
  }();
  return h;
}

// The toolkit's include folders: $CUDA_HOME/include, else $CUDA_PATH/include, else the build's;
// each with its cccl folder (libcu++), listed first.
std::vector<std::string> include_dirs() {
  std::vector<std::string> dirs;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* d = std::getenv(var); d && *d) {
      dirs.push_back(std::string(d) + "/include");
      break;
    }
  }
  if (dirs.empty()) {
    std::stringstream list(KILN_CUDA_INCLUDE_DIR);
    for (std::string d; std::getline(list, d, ';');)
      if (!d.empty()) dirs.push_back(d);
  }
  std::vector<std::string> out;
  for (const auto& d : dirs) {
    std::error_code ec;
    if (fs::is_directory(d + "/cccl", ec)) out.push_back(d + "/cccl");
  }
  out.insert(out.end(), dirs.begin(), dirs.end());
  return out;
}

std::string joined(const std::vector<std::string>& dirs) {
  std::string s;
  for (const auto& d : dirs) s += (s.empty() ? "" : ", ") + d;
  return s;
}

void check(nvrtcResult r, const char* what) {
  KILN_CHECK(r == NVRTC_SUCCESS, "cuda: ", what, ": ", nvrtcGetErrorString(r));
}

std::vector<std::string> options(const std::string& arch, bool contract_fma) {
  // -pch: NVRTC keeps the parsed headers (every kernel's first lines) for the process's later
  // compiles, which then take tens of milliseconds instead of half a second.
  std::vector<std::string> o = {"-std=c++20",
                                "-arch=" + arch,
                                "-default-device",
                                contract_fma ? "--fmad=true" : "--fmad=false",
                                "-pch",
                                "--pch-messages=false"};
  for (const auto& d : include_dirs()) o.push_back("-I" + d);
  return o;
}

// What, besides the source, decides the PTX.
std::string identity(const std::string& arch, bool contract_fma) {
  static const uint64_t header_hash = [] {
    uint64_t h = fnv1a("");
    for (const auto& e : headers()) h = fnv1a(e.text, fnv1a(e.name, h));
    return h;
  }();
  std::string id = arch + "\nnvrtc " + std::to_string(nvrtc_version()) + "\n" + hex(header_hash);
  for (const auto& o : options(arch, contract_fma)) id += "\n" + o;
  return id;
}

struct Cache {
  std::mutex mu;
  std::unordered_map<std::string, std::string> ptx;  // arch + '\n' + source -> PTX
  PtxCacheStats stats;
  std::mutex build_mu;  // one NVRTC compile at a time: a second caller then finds the first's PTX
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: kernels may be compiled during exit
  return *c;
}

// The first line of a disk entry: its PTX's size and hash.
std::string checksum_line(const std::string& ptx) {
  return "// kiln-ptx " + std::to_string(ptx.size()) + " " + hex(fnv1a(ptx)) + "\n";
}

// The PTX of a disk entry, or empty when there is none or it is damaged.
std::string read_entry(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream os;
  os << in.rdbuf();
  const std::string text = os.str();
  const size_t eol = text.find('\n');
  if (eol == std::string::npos) return "";
  std::string ptx = text.substr(eol + 1);
  return text.compare(0, eol + 1, checksum_line(ptx)) == 0 ? ptx : "";
}

// Best effort: a cache directory that cannot be written only costs the next process a compile.
void write_entry(const fs::path& path, const std::string& ptx) {
  static std::atomic<int> counter{0};
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const fs::path tmp =
      path.string() + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary);
    out << checksum_line(ptx) << ptx;
    if (!out.good()) {
      out.close();
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
}

std::string nvrtc_compile(const std::string& source, const std::string& name,
                          const std::string& arch, bool contract_fma) {
  const auto& hs = headers();
  std::vector<const char*> texts, names;
  for (const auto& h : hs) {
    texts.push_back(h.text.c_str());
    names.push_back(h.name.c_str());
  }
  nvrtcProgram prog = nullptr;
  check(nvrtcCreateProgram(&prog, source.c_str(), (name + ".cu").c_str(),
                           static_cast<int>(hs.size()), texts.data(), names.data()),
        "nvrtcCreateProgram");
  struct Destroy {
    nvrtcProgram& p;
    ~Destroy() { nvrtcDestroyProgram(&p); }
  } destroy{prog};
  const std::vector<std::string> opts = options(arch, contract_fma);
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  const nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    std::string log;
    if (nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 1) {
      log.resize(n);
      nvrtcGetProgramLog(prog, log.data());
      log.resize(n - 1);  // the terminating NUL
    }
    KILN_FAIL("cuda: NVRTC could not compile ", name, " for ", arch, " (", nvrtcGetErrorString(r),
              "; CUDA headers from ", joined(include_dirs()), "):\n", log, "\nsource:\n", source);
  }
  size_t n = 0;
  check(nvrtcGetPTXSize(prog, &n), "nvrtcGetPTXSize");
  std::string ptx(n, '\0');
  check(nvrtcGetPTX(prog, ptx.data()), "nvrtcGetPTX");
  if (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

}  // namespace

int nvrtc_version() {
  static const int v = [] {
    int major = 0, minor = 0;
    check(nvrtcVersion(&major, &minor), "nvrtcVersion");
    return major * 1000 + minor * 10;
  }();
  return v;
}

std::string nvrtc_arch(int major, int minor) {
  static const std::vector<int> supported = [] {
    int n = 0;
    check(nvrtcGetNumSupportedArchs(&n), "nvrtcGetNumSupportedArchs");
    std::vector<int> archs(n);
    check(nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
    std::sort(archs.begin(), archs.end());
    return archs;
  }();
  const int want = major * 10 + minor;
  auto it = std::upper_bound(supported.begin(), supported.end(), want);
  KILN_CHECK(it != supported.begin(), "cuda: a device of compute capability ", major, ".", minor,
             " is older than NVRTC ", nvrtc_version() / 1000, ".", nvrtc_version() % 1000 / 10,
             " supports (its oldest architecture is compute_",
             supported.empty() ? 0 : supported.front(), ")");
  return "compute_" + std::to_string(*(it - 1));
}

std::string ptx_cache_dir() { return compiler::cache_dir() + "/cuda"; }

PtxCacheStats ptx_cache_stats() {
  std::lock_guard<std::mutex> lock(cache().mu);
  return cache().stats;
}

void clear_ptx_memory_cache() {
  std::lock_guard<std::mutex> lock(cache().mu);
  cache().ptx.clear();
}

std::string compile_to_ptx(const std::string& source, const std::string& name,
                           const std::string& arch, bool contract_fma) {
  Cache& c = cache();
  const std::string mem_key = arch + (contract_fma ? "\nfma\n" : "\n") + source;
  auto lookup = [&]() -> std::optional<std::string> {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.ptx.find(mem_key);
    if (it == c.ptx.end()) return std::nullopt;
    ++c.stats.memory_hits;
    return it->second;
  };
  if (auto p = lookup()) return *p;
  std::lock_guard<std::mutex> build(c.build_mu);
  if (auto p = lookup()) return *p;  // compiled while this thread waited

  const std::string id = identity(arch, contract_fma);
  const std::string key = hex(fnv1a(source, fnv1a(id))) + hex(fnv1a(id, fnv1a(source)));
  const fs::path path = fs::path(ptx_cache_dir()) / (key + ".ptx");
  std::string ptx = read_entry(path);
  if (!ptx.empty()) {
    std::lock_guard<std::mutex> lock(c.mu);
    ++c.stats.disk_hits;
  } else {
    ptx = nvrtc_compile(source, name, arch, contract_fma);
    {
      std::lock_guard<std::mutex> lock(c.mu);
      ++c.stats.compiles;
    }
    write_entry(path, ptx);
    compiler::log(compiler::LogKind::Perf,
                  "compiled CUDA kernel " + name + " for " + arch + " into " + path.string());
  }
  std::lock_guard<std::mutex> lock(c.mu);
  c.ptx.emplace(mem_key, ptx);
  return ptx;
}

}  // namespace kiln::cuda
