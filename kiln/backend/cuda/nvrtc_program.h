#pragma once
// Run-time compilation of CUDA C++ to PTX with NVRTC, for kernels generated from the scalar
// functors the CPU uses (kiln/backend/scalar.h). Sources may include the headers embedded in
// libkiln (kiln/compile/codegen/embedded_headers.h) and the C++ headers scalar.h and half.h
// include (<cmath>, <cstdint>, <cstring>, <limits>, <type_traits>): NVRTC cannot read the host's,
// so those names are small in-memory headers that forward to libcu++ (<cuda/std/...>, from the
// CUDA toolkit's include/cccl: $CUDA_HOME/include, else $CUDA_PATH/include, else the folders
// KILN_CUDA_INCLUDE_DIR named at build time).
//
// Compiled as C++20 with -default-device, without fast math and without contracting a * b + c
// into an FMA (--fmad=false), so that the device computes what the CPU kernels compute.
//
// PTX is cached in memory (per source and architecture) and on disk under
// $KILN_CACHE_DIR/cuda (default ~/.cache/kiln/cuda), keyed by a hash of the source, the
// architecture, NVRTC's version, the options and the headers' text. Entries are written by atomic
// rename and carry a checksum; a damaged one is compiled again. A disk cache that cannot be
// written is skipped.
#include <cstdint>
#include <string>

namespace kiln::cuda {

// The PTX of `source` for virtual architecture `arch` ("compute_90"); `name` names the program
// in NVRTC's messages. A failed compile is a kiln::Error carrying NVRTC's log and the source.
// contract_fma lets NVRTC fuse a * b + c into one rounding (--fmad=true, nvcc's default): faster
// for arithmetic-heavy kernels, no longer bit-identical to the CPU's separate roundings.
std::string compile_to_ptx(const std::string& source, const std::string& name,
                           const std::string& arch, bool contract_fma = false);

// "compute_XY" for a device of compute capability major.minor: the newest architecture this
// NVRTC supports that the device runs (the driver compiles the PTX for the device itself).
std::string nvrtc_arch(int major, int minor);

// NVRTC's version as major * 1000 + minor * 10 (13.0 is 13000).
int nvrtc_version();

struct PtxCacheStats {
  int64_t compiles = 0;     // sources this process compiled with NVRTC
  int64_t disk_hits = 0;    // PTX read from the disk cache
  int64_t memory_hits = 0;  // PTX already in this process
};
PtxCacheStats ptx_cache_stats();
// The directory PTX is kept in (compiler::cache_dir() + "/cuda").
std::string ptx_cache_dir();
// Forgets the in-memory cache (tests: the next compile reads the disk cache).
void clear_ptx_memory_cache();

}  // namespace kiln::cuda
